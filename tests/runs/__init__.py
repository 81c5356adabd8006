"""Tests of the training-run subject (trainproof.runs): its readers, model and follower."""
