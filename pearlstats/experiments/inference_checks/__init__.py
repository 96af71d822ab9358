"""Simulations that check the inference is calibrated (issue 28).

:mod:`.designs` draws data sets from the designs the checks use. The checks
themselves (coefficient coverage, weight uncertainty, honest standard errors)
each live in their own module and return tidy tables with the target and
whether it is met; ``vignettes/10_inference_checks.py`` runs them.
"""

from .designs import ALL_DESIGNS, DESIGNS, EXTRA_DESIGNS, Design, Sample, get_design

__all__ = ["ALL_DESIGNS", "DESIGNS", "EXTRA_DESIGNS", "Design", "Sample", "get_design"]
