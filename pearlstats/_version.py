"""The package version, in one place (``pearlstats.__version__``, ``pearlstats.cite()``)."""

__version__ = "0.9.0"
