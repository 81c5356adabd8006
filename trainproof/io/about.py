"""What the package says of itself: its version, and where it lives."""

__version__ = "0.1.0"

HOMEPAGE = "https://github.com/trainproof/trainproof"
"""Where the project lives; SARIF and the reports link to its rule documentation."""
