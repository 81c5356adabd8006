"""``trainproof data``: speech/TTS dataset preflight.

``manifest`` reads the layouts (LJSpeech folder, NeMo JSONL, CSV/TSV, Kaldi
data dir, folder of audio with transcripts, LibriSpeech-style folder) into a :class:`Manifest`;
``clip`` turns one clip reference into a small record of numbers (pure,
picklable, no global state, so any engine can run it); ``engine`` runs it on
this machine's cores with a cache, ``ray_engine`` on a Ray cluster's with the
same cache (the only module that imports ray); ``uri`` reads clips named by
``s3://``, ``gs://`` or ``file://`` URIs; the rules judge the table of records.
Heavy imports (soundfile, pandas, xxhash, ray, pyarrow) happen inside the functions that need them.
"""

ENGINES = ("local", "ray")
"""Where clips are decoded: this machine's cores (:mod:`trainproof.data.engine`), or a Ray cluster's
(:mod:`trainproof.data.ray_engine`). Here, so that the command line lists them without importing the command."""
