"""Tests of the shared I/O floor (trainproof.io): file access, safe text, numbers as printed, output files."""
