"""Loading a tokenizer, whatever library wrote it, behind one small interface.

``load`` turns a path (a sentencepiece ``.model``, a HuggingFace
``tokenizer.json``, or a local HuggingFace tokenizer folder) into a
:class:`trainproof.tokenizer.load.Tokenizer`. sentencepiece, tokenizers and
transformers are imported inside the functions that need them, and only the
one the path calls for.
"""
