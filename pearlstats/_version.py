"""The package version, in one place (``pearlstats.__version__``, ``pearlstats.cite()``)."""

__version__ = "0.8.12"
