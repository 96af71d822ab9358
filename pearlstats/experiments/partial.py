"""The command line's results file: each run's rows appended as it finishes, renamed at the end.

``OUT.partial`` (beside ``OUT``) starts with one ``#`` line describing the grid,
then is a CSV of the rows of finished runs, in order of completion. It is
created before any run (so an unusable ``--out`` fails at once), appended with
one unbuffered write per finished run, and kept when the run is interrupted,
so that ``--resume`` can skip what finished. At the end its rows are sorted by
(setting, repetition), written to ``OUT.tmp`` and renamed onto ``OUT``.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from ..exceptions import OptionError

try:  # POSIX: two runs must not append to the same partial file
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["PartialResults"]

_PANDAS_MAJOR = int(pd.__version__.split(".")[0])
HEADER = "# pearlstats.experiments partial results of the grid "


class PartialResults:
    """Rows of finished runs kept in ``OUT.partial`` until the grid is done.

    Parameters
    ----------
    out : str
        The final CSV path.
    grid : mapping
        What identifies the grid (experiment, seed, sizes, ...); a partial file
        of another grid is refused on resume. JSON-serialisable.
    settings : list of dict
        The grid's settings, to match rows to (setting, repetition) positions.
    repetitions : int
        Runs per setting.
    resume : bool
        Continue an existing ``OUT.partial`` (its finished runs are in
        :attr:`done`); without it an existing partial file is an error, so that
        no finished work is overwritten.

    Raises
    ------
    OptionError
        ``out`` is a folder, its folder does not exist or cannot hold the
        partial file, a partial file exists without ``resume``, or the one to
        resume belongs to another grid or is damaged.

    Examples
    --------
    >>> import os, shutil, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> store = PartialResults(os.path.join(folder, "r.csv"), {"seed": 1}, [{"a": 1}], 2)
    >>> store.append((0, 1), [{"a": 1, "repetition": 1, "x": 0.5}])
    >>> store.append((0, 0), [{"a": 1, "repetition": 0, "x": 0.25}])
    >>> store.finish()["repetition"].tolist()
    [0, 1]
    >>> os.listdir(folder)
    ['r.csv']
    >>> shutil.rmtree(folder)
    """

    def __init__(
        self,
        out: str,
        grid: Mapping,
        settings: list[dict],
        repetitions: int,
        *,
        resume: bool = False,
    ) -> None:
        self.out = os.path.abspath(out)
        self.path = self.out + ".partial"
        self.grid = json.loads(json.dumps(dict(grid)))  # as it reads back from the file
        self.settings, self.repetitions = settings, repetitions
        self.columns: list[str] | None = None
        self.done: set[tuple[int, int]] = set()
        _check_target(out, self.out)
        exists = self.resumed = os.path.exists(self.path)
        if exists and not resume:
            raise OptionError(
                f"{self.path!r} holds the finished runs of an earlier, interrupted run; pass "
                "--resume to continue it, or delete that file to start over"
            )
        if exists:
            self._read_existing()
        flags = os.O_WRONLY | (os.O_APPEND if exists else os.O_CREAT | os.O_EXCL)
        try:
            self._fd = os.open(self.path, flags, 0o666)
        except OSError as error:
            raise OptionError(
                f"--out {out!r}: cannot create the results file {self.path!r} beside it "
                f"({error.strerror}); choose a path in a writable folder"
            ) from None
        self._lock(out)
        if not exists:
            self._write(HEADER + json.dumps(self.grid, sort_keys=True) + "\n")

    def _lock(self, out: str) -> None:
        if fcntl is None:  # pragma: no cover
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            raise OptionError(
                f"--out {out!r}: another run is writing {self.path!r}; wait for it or choose "
                "another --out"
            ) from None

    def _read_existing(self) -> None:
        with open(self.path, "rb") as file:
            data = file.read()
        first, _, rows = data.partition(b"\n")
        text = first.decode(errors="replace")
        if not text.startswith(HEADER):
            raise OptionError(
                f"--resume: {self.path!r} is not a partial results file of "
                f"pearlstats.experiments (its first line is {text[:60]!r}); move it away"
            )
        grid = json.loads(text[len(HEADER):])
        if grid != self.grid:
            differences = "; ".join(
                f"{key} {grid.get(key)!r} there, {self.grid.get(key)!r} now"
                for key in sorted(set(grid) | set(self.grid))
                if grid.get(key) != self.grid.get(key)
            )
            raise OptionError(
                f"--resume: {self.path!r} holds runs of a different grid ({differences}); rerun "
                "with the options that run was started with, or delete the file to start over"
            )
        if rows and not rows.endswith(b"\n"):
            raise OptionError(
                f"--resume: the last line of {self.path!r} is incomplete (the run was killed "
                "while writing it); delete that run's lines at the end of the file and resume"
            )
        if rows.strip():
            table = _read_rows(rows)
            self.columns = list(table.columns)
            self.done = set(map(tuple, self.positions(table).tolist()))

    def positions(self, table: pd.DataFrame) -> np.ndarray:
        """Each row's (setting index, repetition), matched by the setting's values.

        Raises an OptionError naming the rows that belong to no setting or
        repetition of this grid.
        """
        index = np.full(len(table), -1)
        for i, setting in enumerate(self.settings):
            match = np.ones(len(table), dtype=bool)
            for name, value in setting.items():
                match &= (table[name] == value).to_numpy() if name in table else False
            index[(index < 0) & match] = i
        if "repetition" not in table:
            raise OptionError(f"{self.path!r} has no repetition column; delete it to start over")
        repetition = pd.to_numeric(table["repetition"], errors="coerce")
        bad = np.flatnonzero((index < 0) | ~repetition.isin(range(self.repetitions)).to_numpy())
        if bad.size:
            raise OptionError(
                f"{self.path!r}: data row(s) {bad[:5].tolist()} match no setting of the grid "
                f"{self.settings} with a repetition in 0..{self.repetitions - 1}; delete the "
                "file to start over"
            )
        return np.column_stack([index, repetition.to_numpy(dtype=int)])

    def append(self, position: tuple[int, int], records: Iterable[Mapping]) -> None:
        """Write one finished run's rows with a single unbuffered write."""
        frame = pd.DataFrame(list(records))
        if self.columns is None:
            self.columns = list(frame.columns)
            text = frame.to_csv(index=False, lineterminator="\n")
        else:
            extra = [name for name in frame.columns if name not in self.columns]
            if extra:
                raise OptionError(
                    f"run {position} returned field(s) {extra} that the earlier runs in "
                    f"{self.path!r} do not have ({self.columns}); a task must return the same "
                    "fields every run"
                )
            text = frame.reindex(columns=self.columns).to_csv(
                index=False, header=False, lineterminator="\n"
            )
        self._write(text)
        self.done.add(tuple(position))

    def _write(self, text: str) -> None:
        data = text.encode()
        while data:  # a regular file takes it in one write; loop for the rare short write
            data = data[os.write(self._fd, data):]

    def close(self) -> bool:
        """Close the partial file, keeping it if any run finished; True if it was kept."""
        self._close()
        # Whether rows were written, from the file itself: Ctrl-C may land between a run's write
        # and its entry in self.done, and those rows must not be deleted.
        with open(self.path, "rb") as file:
            rows = file.read().partition(b"\n")[2]
        if rows.count(b"\n") > 1:  # the CSV header and at least one row
            self.done = set(map(tuple, self.positions(_read_rows(rows)).tolist()))
            return True
        os.remove(self.path)
        return False

    def _close(self) -> None:
        if self._fd is not None:  # close() may follow an interrupted finish()
            os.close(self._fd)
            self._fd = None

    def finish(self) -> pd.DataFrame:
        """Sort the rows by (setting, repetition), rename them onto ``out``; return them."""
        self._close()
        with open(self.path, "rb") as file:
            table = _read_rows(file.read().partition(b"\n")[2])
        order = self.positions(table)
        table = table.iloc[np.lexsort((order[:, 1], order[:, 0]))].reset_index(drop=True)
        temporary = self.out + ".tmp"
        table.to_csv(temporary, index=False, lineterminator="\n")
        os.replace(temporary, self.out)  # atomic: OUT is either the old file or the whole new one
        os.remove(self.path)
        return table


def _read_rows(data: bytes) -> pd.DataFrame:
    # The numbers read back must be the ones written, so that a resumed run's CSV is identical:
    # pandas 3 parses floats exactly by default (and deprecates float_precision); pandas 2's
    # default "high" parser can be one ulp off, "round_trip" is exact.
    exact = {"float_precision": "round_trip"} if _PANDAS_MAJOR < 3 else {}
    return pd.read_csv(io.BytesIO(data), **exact)


def _check_target(out: str, path: str) -> None:
    folder = os.path.dirname(path)
    if os.path.isdir(path):
        raise OptionError(
            f"--out {out!r} is a directory; give a file path such as "
            f"{os.path.join(out, 'results.csv')!r}"
        )
    if not os.path.isdir(folder):
        raise OptionError(f"--out {out!r}: the folder {folder!r} does not exist; create it first")
