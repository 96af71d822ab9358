"""The failure ledger: what went wrong for which candidate, and what was done.

Nothing is hidden: a candidate that fails, does not converge, shows separation,
or is rank deficient in some fold gets a row here. Rows whose ``excluded`` flag
is set take the candidate out of the weight solve (weight exactly 0); the rest
are notes (e.g. a rank-deficient fit solved by minimum-norm least squares, as
statsmodels' pinv does).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd

__all__ = ["LedgerEntry", "FailureLedger", "LEDGER_COLUMNS"]

LEDGER_COLUMNS = ["candidate", "fold", "stage", "kind", "reason", "action", "excluded"]


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded event.

    Attributes
    ----------
    candidate : str
        Candidate label.
    fold : int or None
        Fold number (0-based) or None for the refit on all rows / all folds.
    stage : str
        ``"cv"``, ``"refit"`` or ``"weights"``.
    kind : str
        ``"failed"``, ``"infeasible"``, ``"not converged"``, ``"separation"``,
        ``"rank deficient"``, ``"duplicate"``.
    reason : str
        What happened, in words.
    action : str
        What pearlstats did about it.
    excluded : bool
        Whether the candidate was given weight 0 because of it.
    """

    candidate: str
    fold: int | None
    stage: str
    kind: str
    reason: str
    action: str
    excluded: bool


@dataclass
class FailureLedger:
    """Accumulates :class:`LedgerEntry` rows during a fit."""

    entries: list[LedgerEntry] = field(default_factory=list)

    def record(
        self,
        candidate: str,
        fold: int | None,
        stage: str,
        kind: str,
        reason: str,
        action: str,
        excluded: bool,
    ) -> None:
        self.entries.append(
            LedgerEntry(candidate, fold, stage, kind, reason, action, bool(excluded))
        )

    def extend(self, entries: Iterable[LedgerEntry]) -> None:
        self.entries.extend(entries)

    def to_frame(self) -> pd.DataFrame:
        """The ledger as a DataFrame (empty, with the columns, when nothing happened)."""
        frame = pd.DataFrame([entry.__dict__ for entry in self.entries], columns=LEDGER_COLUMNS)
        return frame.astype({"fold": "Int64", "excluded": bool})
