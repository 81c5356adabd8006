"""``trainproof text``: preflight of LLM fine-tuning datasets (JSON Lines).

``reader`` reads a dataset into a :class:`~trainproof.text.model.TextDataset`:
its training examples as rows of one of five shapes, and what is wrong with
each line. The rules judge that model and never reopen the file.
"""
