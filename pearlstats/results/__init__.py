"""What a fit found and how it is shown.

:class:`PearlResults` (``core``) is assembled from one part per job: ``risks``
(CV and honest risks of PEARL and the baselines), ``refits`` (candidates refitted
on all rows), ``prediction`` (``predict``/``evaluate`` of new rows),
``diagnostics`` (weights' stability, block importance, bootstrap); the summary
(``summary``, ``sections``, ``latex``, ``text_layout``, ``formatting``), the
held-out evaluation and comparison tables (``evaluation``) and the averaged
model (``averaging``) read it. The strategies themselves (PEARL and the paper's
baselines as weight vectors) are :mod:`pearlstats.weights.baselines`. Nothing
here imports :mod:`pearlstats.distributed`; dask rows are predicted through the
:class:`~pearlstats.results.prediction.LazyRows` that :func:`pearlstats.fit` gives.
"""

from __future__ import annotations

from .core import PearlResults

__all__ = ["PearlResults"]
