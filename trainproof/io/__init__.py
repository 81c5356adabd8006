"""Shared I/O, the bottom floor: errors, bounded reading, output files, safe text and numbers as printed."""
