"""Tests of the command line (trainproof.cli): arguments, exit codes, the process."""
