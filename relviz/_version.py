"""The package version (one place: ``relviz.__version__``, the saved synthesizers' tag)."""

__version__ = "0.1.0"
