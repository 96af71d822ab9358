"""The package version, in one place (``pearlstats.__version__``, ``pearlstats.cite()``)."""

__version__ = "0.7.0"
