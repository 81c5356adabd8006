"""Rules: the checks that turn a Run into findings, and the engine that runs them."""
