"""Training runs as a subject: the model of a run and the readers of every log format."""
