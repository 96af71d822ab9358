"""Exceptions and warnings raised by pearlstats.

Every error a user can trigger is a subclass of :class:`PearlError` and also of
the built-in class that fits (``ValueError``, ``TypeError``, ``RuntimeError``),
so ``except ValueError`` keeps working for code written against numpy or
statsmodels. Messages name the offending thing (block, column, class, option, rows: by
the data's index labels where it has its own, else by position) and say what would be
right.

Examples
--------
>>> import pearlstats as pearl
>>> try:
...     pearl.fit("y ~ block(a)", {"y": [1.0, 2.0, 3.0]}, blocks={})
... except pearl.BlockError as err:
...     print(type(err).__name__)
BlockError
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PearlError",
    "FormulaError",
    "BlockError",
    "DataError",
    "MissingValueError",
    "ResponseError",
    "SeparationError",
    "FoldError",
    "CandidateError",
    "UnknownCandidateError",
    "OptionError",
    "InMemoryOnlyError",
    "NotFittedError",
    "AllCandidatesFailedError",
    "MissingDependencyError",
    "TaskError",
    "PearlWarning",
    "CandidateFailureWarning",
    "SeparationWarning",
    "ConvergenceWarning",
    "UnknownTokensWarning",
    "UnidentifiedCoefficientWarning",
    "ResampleFailureWarning",
    "ObservationWeightWarning",
    "format_positions",
]


class PearlError(Exception):
    """Base class of every exception raised by pearlstats."""


class FormulaError(PearlError, ValueError):
    """The formula cannot be parsed or uses ``block()`` in an unsupported way."""


class BlockError(PearlError, ValueError):
    """A representation block is unknown, mis-shaped or inconsistent with the data."""


class DataError(PearlError, ValueError):
    """The data (response or covariates) is missing a column or has the wrong type."""


class MissingValueError(DataError):
    """NaN or infinite values were found; the message lists the row positions."""


class ResponseError(PearlError, ValueError):
    """The response does not suit the chosen family (values, classes, counts)."""


class SeparationError(ResponseError):
    """A classification candidate's classes are separated and ``separation="raise"`` was given."""


class FoldError(PearlError, ValueError):
    """The cross-validation specification cannot be used with these rows."""


class CandidateError(PearlError, ValueError):
    """The candidate specification is invalid or too large."""


class UnknownCandidateError(CandidateError, KeyError):
    """A candidate label the fit does not have.

    Also a ``KeyError``: ``results.candidates`` is a mapping, so ``label in
    results.candidates`` and ``except KeyError`` must keep working.
    """

    def __str__(self) -> str:
        # KeyError would show the message in quotes, as a repr of a missing key.
        return Exception.__str__(self)


class OptionError(PearlError, ValueError):
    """An option (family, loss, solver, ...) has an unknown or incompatible value."""


class InMemoryOnlyError(OptionError):
    """A feature needs the rows in one process and the fit's rows are dask partitions."""


class NotFittedError(PearlError, RuntimeError, ValueError, AttributeError):
    """A learner or representation set was used before ``fit``.

    A ``ValueError`` and an ``AttributeError`` as scikit-learn's ``NotFittedError`` is
    (its checks and ``except ValueError`` expect one), and a ``RuntimeError`` as it was.
    Being an ``AttributeError``, it makes ``hasattr`` False for a property that needs a
    fit (``BagOfWords().vocabulary_``), as for scikit-learn's fitted attributes.
    """


class AllCandidatesFailedError(PearlError, RuntimeError):
    """Every candidate failed in cross-validation; the ledger says why.

    Parameters
    ----------
    message : str
        Summary of the failure.
    failures : pandas.DataFrame, optional
        The failure ledger (candidate, fold, stage, reason, action).
    """

    def __init__(self, message: str, failures: pd.DataFrame | None = None):
        super().__init__(message)
        self.failures = failures


class MissingDependencyError(PearlError, ImportError):
    """An optional package is not installed; the message names it and the pip command.

    Examples
    --------
    >>> error = MissingDependencyError("torch is needed: pip install 'pearlstats[deep]'")
    >>> isinstance(error, ImportError)
    True
    """


class TaskError(PearlError, RuntimeError):
    """A task of a replication grid raised; the message names its setting and repetition.

    The task's own exception is chained as ``__cause__`` (in a process worker,
    its traceback text). ``setting`` and ``repetition`` say which run failed.

    Examples
    --------
    >>> error = TaskError("setting {'n': 5}, repetition 2: ...", setting={"n": 5}, repetition=2)
    >>> isinstance(error, RuntimeError), error.repetition
    (True, 2)
    """

    def __init__(
        self, message: str, setting: dict | None = None, repetition: int | None = None
    ) -> None:
        super().__init__(message)
        self.setting = setting
        self.repetition = repetition


class PearlWarning(UserWarning):
    """Base class of the warnings issued by pearlstats."""


class CandidateFailureWarning(PearlWarning):
    """A candidate failed in some fold; it gets weight 0 and is in the ledger."""


class SeparationWarning(PearlWarning):
    """Perfect or quasi-complete separation was detected for a classification candidate."""


class ConvergenceWarning(PearlWarning):
    """An iterative fit stopped before meeting its tolerance."""


class UnknownTokensWarning(PearlWarning):
    """Most tokens of the documents have no word vector, so the block is mostly zeros."""


class UnidentifiedCoefficientWarning(PearlWarning):
    """A candidate's design is rank deficient on all rows: some coefficients are not identified.

    Typically a covariate that a block makes redundant (``x1`` beside a PCA of ``x1, x2``).
    The averaged coefficients of those terms are NaN in ``params``, ``bse`` and
    :meth:`~pearlstats.PearlResults.coef_table`, and the summary's note names them with their
    candidates.
    """


class ResampleFailureWarning(PearlWarning):
    """Some bootstrap resamples could not be fitted (e.g. a rare class drawn once); they are
    left out, and the result's ``attrs["failed"]`` says which and why."""


class ObservationWeightWarning(PearlWarning):
    """Observation weights that are legal but probably not what was meant, e.g. frequency
    weights normalised to sum 1 (use ``weight_type="variance"`` for relative weights)."""


def format_positions(positions: Sequence[int], limit: int = 10,
                     labels: pd.Index | None = None) -> str:
    """Render row positions for an error message, truncating long lists.

    Parameters
    ----------
    positions : sequence of int
        Zero-based row positions.
    limit : int, default 10
        How many positions to show before summarising the rest.
    labels : pandas.Index, optional
        The labels of the rows *positions* index (a DataFrame's index). Where they are
        not 0..n-1 in order, the rows are named by their labels, which is how the user
        finds them (``df.loc[...]``).

    Returns
    -------
    str
        For example ``"rows 3, 17 and 2 more"``.

    Examples
    --------
    >>> format_positions([3, 17])
    'rows 3, 17'
    >>> format_positions(range(12), limit=3)
    'rows 0, 1, 2 and 9 more'
    >>> import pandas as pd
    >>> format_positions([1], labels=pd.Index(["ann", "bob", "cy"]))
    "row labelled 'bob'"
    """
    positions = [int(p) for p in positions]
    if labels is not None and not _is_default_index(labels):
        return format_labels(labels[positions], limit)
    shown = ", ".join(str(p) for p in positions[:limit])
    extra = len(positions) - limit
    word = "row" if len(positions) == 1 else "rows"
    return f"{word} {shown}" + (f" and {extra} more" if extra > 0 else "")


def format_labels(labels: Sequence, limit: int = 10) -> str:
    """Render row labels (index values) for an error message, truncating long lists.

    Examples
    --------
    >>> format_labels(["a", "b"])
    "rows labelled 'a', 'b'"
    >>> format_labels([7, 8, 9], limit=2)
    'rows labelled 7, 8 and 1 more'
    """
    labels = list(labels)
    shown = ", ".join(repr(_plain(label)) for label in labels[:limit])
    extra = len(labels) - limit
    word = "row labelled" if len(labels) == 1 else "rows labelled"
    return f"{word} {shown}" + (f" and {extra} more" if extra > 0 else "")


def _plain(label):
    """A numpy scalar as its Python value, so ``repr`` prints ``7``, not ``np.int64(7)``."""
    return label.item() if hasattr(label, "item") and not isinstance(label, str) else label


def _is_default_index(labels: pd.Index) -> bool:
    """True for the labels 0..n-1 in order, where a position and a label say the same."""
    import pandas as pd

    return bool(labels.equals(pd.RangeIndex(len(labels))))
