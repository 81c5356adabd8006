"""Integrations with training frameworks; each needs its framework, installed as an extra."""
