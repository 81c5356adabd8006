"""The readers of each manifest layout `trainproof data` reads; :mod:`trainproof.data.manifest` picks one."""
