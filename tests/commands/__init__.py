"""Tests of the commands (trainproof.commands): watch, live judging, folders of runs, a new command end to end."""
