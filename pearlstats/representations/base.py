"""The FRL stage: a named set of representation learners fitted on unlabeled rows.

:class:`Representations` fits each learner on its columns of the unlabeled
rows and maps any rows (labeled, new) to named blocks. A learner is any object
with ``fit(X)`` and ``transform(X)`` (the scikit-learn convention) or a plain
function of the rows (wrapped in :class:`FunctionLearner`).
"""

from __future__ import annotations

import copy
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..exceptions import BlockError, DataError, NotFittedError, PearlError, format_positions
from ._checks import check_seed, float_2d
from ._params import LearnerParams
from ._rows import INPUT_KINDS, Rows, column_list

__all__ = ["Representations", "FunctionLearner"]


class FunctionLearner(LearnerParams):
    """A representation computed by a fixed function of the rows (nothing is learned).

    Parameters
    ----------
    func : callable
        ``func(frame) -> 2-D array`` (or 1-D for a one-column block, or a scipy
        sparse matrix); ``frame`` is a DataFrame of the learner's columns. Use a
        module-level function if the fitted representations must pickle.
    columns : str or list of str, optional
        Columns passed to ``func``; default: those of the ``Representations``.

    Attributes
    ----------
    input_kind : str
        ``"frame"``: a ``Representations`` container hands :meth:`fit` and
        :meth:`transform` a DataFrame of its columns.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> square = FunctionLearner(lambda f: f.to_numpy() ** 2, columns=["x"])
    >>> square.fit(None).transform(pd.DataFrame({"x": [1.0, 3.0]}))
    array([[1.],
           [9.]])
    """

    input_kind = "frame"

    def __init__(self, func: Callable[[Any], Any], columns: str | Sequence[str] | None = None):
        if not callable(func):
            raise BlockError(f"FunctionLearner needs a callable, got {type(func).__name__}")
        self.func = func
        self.columns = columns

    def __repr__(self):
        # the function by its name, then what else was given (columns=)
        return self._repr(getattr(self.func, "__name__", repr(self.func)), exclude=("func",))

    def __sklearn_is_fitted__(self) -> bool:
        # nothing is learned, so it is always ready (scikit-learn's FunctionTransformer too):
        # a Pipeline ending in it may transform without a fit
        return True

    def fit(self, X: Any, y: Any = None) -> FunctionLearner:
        """Nothing to learn; returns the learner.

        Parameters
        ----------
        X : any
            Ignored: there is nothing to learn.
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> square = pearl.FunctionLearner(lambda frame: frame.to_numpy() ** 2)
        >>> square.fit(None) is square
        True
        """
        return self

    def transform(self, X: Any) -> Any:
        """``func(X)``.

        Parameters
        ----------
        X : DataFrame
            The learner's columns of the rows.

        Examples
        --------
        >>> import pandas as pd, pearlstats as pearl
        >>> square = pearl.FunctionLearner(lambda frame: frame.to_numpy() ** 2)
        >>> square.fit(None).transform(pd.DataFrame({"x": [1.0, 3.0]}))
        array([[1.],
               [9.]])
        """
        return self.func(X)

    def fit_transform(self, X: Any, y: Any = None) -> Any:
        """``func(X)`` (there is nothing to fit).

        Parameters
        ----------
        X : DataFrame
            The learner's columns of the rows.
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> import pandas as pd, pearlstats as pearl
        >>> pearl.FunctionLearner(lambda frame: frame.to_numpy() + 1).fit_transform(
        ...     pd.DataFrame({"x": [1.0, 3.0]}))
        array([[2.],
               [4.]])
        """
        return self.fit(X).transform(X)

    def _output_width(self) -> int:
        # func's width is seen only in its output (fit does not call it: fit(None) is allowed),
        # and scikit-learn's FunctionTransformer has no names without feature_names_out either
        raise BlockError(
            "FunctionLearner cannot name its output columns: their number is known only from "
            "what func returns; set_output(transform='pandas') gives a DataFrame whose columns "
            "are functionlearner[0], functionlearner[1], ..."
        )


class Representations:
    """Named representation learners fitted together on unlabeled rows (the FRL stage).

    Parameters
    ----------
    learners : mapping of str to learner
        Block name -> learner. A learner is an object with ``fit(X)`` and
        ``transform(X)`` or a callable of the rows (wrapped in
        :class:`FunctionLearner`). Numeric learners receive a float 2-D array
        of their columns, text learners (``input_kind = "text"``) a list of
        strings from exactly one column; for other objects one column of
        strings means text and anything else numeric.
    columns : str or list of str, optional
        Input columns of the learners that do not name their own with a
        ``columns=`` argument. **When both are None a learner reads every
        column of the rows given to** :meth:`fit` — a numeric learner then
        needs every column to be numeric, and a response or identifier column
        in those rows becomes an input of the block. Give ``columns=`` whenever
        the unlabeled rows hold anything but the learners' inputs. The columns
        read at fit are listed in :attr:`input_columns` and are the ones read
        from new rows.
    seed : int, optional
        Reaches every stochastic learner whose own seed is None, the torch
        learners included: each gets ``SeedSequence(seed, spawn_key=(crc32(name),))``,
        set as its ``seed`` (pearlstats learners) or ``random_state``
        (scikit-learn objects), and to each step of a scikit-learn ``Pipeline`` (every
        nested ``random_state`` of ``get_params(deep=True)``, keyed by its path too).
        A learner's or step's explicit seed wins. Keyed by name,
        so adding a learner leaves the other blocks unchanged. The same seed
        gives identical blocks; different seeds give different stochastic blocks.

    Notes
    -----
    :meth:`fit` fits copies of the learners (the objects passed in stay
    unfitted); ``reps[name]`` is the fitted copy. Fitting is all-or-nothing:
    if any learner fails, a fitted container keeps its previous learners.
    Blocks are 2-D float64 arrays with one row per input row, or CSR matrices
    for word-count and TF-IDF blocks.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import pearlstats.representations as frl
    >>> rng = np.random.default_rng(0)
    >>> unlabeled = pd.DataFrame(rng.normal(size=(200, 2)), columns=["x1", "x2"])
    >>> reps = frl.Representations({
    ...     "pca": frl.PCA(n_components=2),
    ...     "kpca_rbf": frl.KernelPCA(n_components=2, kernel="rbf"),
    ... }, columns=["x1", "x2"], seed=0).fit(unlabeled)
    >>> blocks = reps.transform(unlabeled.head(5))
    >>> reps.dims, blocks["kpca_rbf"].shape
    ({'pca': 2, 'kpca_rbf': 2}, (5, 2))
    """

    def __init__(
        self, learners: Mapping, columns: str | Sequence[str] | None = None, seed: int | None = None
    ):
        if not isinstance(learners, Mapping) or not learners:
            raise BlockError(
                "learners must be a non-empty dict of block name -> learner, e.g. {'pca': "
                f"pearl.PCA(2)}}; got {type(learners).__name__}"
            )
        self._learners = {}
        for name, learner in learners.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise BlockError(
                    f"representation name {name!r} must be a valid Python identifier (it is used "
                    "as block(name) in formulas), such as 'kpca_rbf'"
                )
            self._learners[name] = _as_learner(name, learner)
        self.columns = column_list(columns, "Representations")
        check_seed(seed)
        self.seed = seed
        self._fitted = None

    # ---------------------------------------------------------------- properties
    @property
    def names(self) -> list[str]:
        """Block names, in the order given.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> rows = pd.DataFrame(rng.normal(size=(50, 3)), columns=["x1", "x2", "x3"])
        >>> reps = pearl.Representations({"pca": pearl.PCA(n_components=2),
        ...                               "raw": pearl.Raw(columns=["x3"])}, columns=["x1", "x2"])
        >>> reps.names
        ['pca', 'raw']
        """
        return list(self._learners)

    @property
    def is_fitted(self) -> bool:
        """Whether :meth:`fit` has run (successfully).

        Examples
        --------
        >>> import numpy as np, pandas as pd, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> rows = pd.DataFrame(rng.normal(size=(50, 3)), columns=["x1", "x2", "x3"])
        >>> reps = pearl.Representations({"pca": pearl.PCA(n_components=2),
        ...                               "raw": pearl.Raw(columns=["x3"])}, columns=["x1", "x2"])
        >>> reps.is_fitted
        False
        >>> reps.fit(rows).is_fitted
        True
        """
        return self._fitted is not None

    @property
    def dims(self) -> dict[str, int]:
        """Block name -> block width (number of columns).

        Examples
        --------
        >>> import numpy as np, pandas as pd, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> rows = pd.DataFrame(rng.normal(size=(50, 3)), columns=["x1", "x2", "x3"])
        >>> reps = pearl.Representations({"pca": pearl.PCA(n_components=2),
        ...                               "raw": pearl.Raw(columns=["x3"])}, columns=["x1", "x2"])
        >>> reps.fit(rows).dims
        {'pca': 2, 'raw': 1}
        """
        self._require_fitted("dims")
        return {name: spec["dim"] for name, spec in self._fitted.items()}

    @property
    def input_columns(self) -> list:
        """The raw input columns the learners read, in first-use order.

        After :meth:`fit`, exactly the columns read from the fitted rows (every
        column of those rows for a learner without ``columns=``). Before fitting,
        known only when every learner's columns are given; otherwise a
        :class:`~pearlstats.exceptions.NotFittedError`.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> rows = pd.DataFrame(rng.normal(size=(50, 3)), columns=["x1", "x2", "x3"])
        >>> reps = pearl.Representations({"pca": pearl.PCA(n_components=2),
        ...                               "raw": pearl.Raw(columns=["x3"])}, columns=["x1", "x2"])
        >>> reps.input_columns
        ['x1', 'x2', 'x3']
        """
        if self._fitted is not None:
            sources = [spec["columns"] for spec in self._fitted.values()]
        else:
            sources = [column_list(getattr(lrn, "columns", None), name) or self.columns
                       for name, lrn in self._learners.items()]
            if any(cols is None for cols in sources):
                raise NotFittedError(
                    "input_columns of a learner without columns= are known only after fit() "
                    "(it reads every column of the fitted rows)"
                )
        return list(dict.fromkeys(c for cols in sources for c in cols))

    def columns_read_by(self, names: str | Sequence[str]) -> list:
        """The raw input columns the fitted learners of blocks *names* read, in first-use
        order (what ``transform(rows, names=names)`` needs in *rows*).

        Parameters
        ----------
        names : str or sequence of str
            Block names (a lone str is one name); names that are not blocks of this
            container read nothing.

        Returns
        -------
        list of str

        Examples
        --------
        >>> import numpy as np, pandas as pd, pearlstats as pearl
        >>> rows = pd.DataFrame(np.random.default_rng(0).normal(size=(50, 3)),
        ...                     columns=["x1", "x2", "x3"])
        >>> reps = pearl.Representations({"pca": pearl.PCA(n_components=2),
        ...                               "raw": pearl.Raw(columns=["x3"])}, columns=["x1", "x2"])
        >>> reps.fit(rows).columns_read_by(["raw"])
        ['x3']
        """
        self._require_fitted("columns_read_by()")
        names = _name_list(names)
        return list(dict.fromkeys(column for name in names if name in self._fitted
                                  for column in self._fitted[name]["columns"]))

    def __getitem__(self, name: str):
        self._require_fitted(f"reps[{name!r}]")
        if name not in self._fitted:
            raise BlockError(f"no representation named {name!r}; the names are {self.names}")
        return self._fitted[name]["learner"]

    def __repr__(self):
        # once fitted, show the fitted copies (with the seeds they were given)
        learners = (
            {name: spec["learner"] for name, spec in self._fitted.items()}
            if self.is_fitted
            else self._learners
        )
        inner = ", ".join(f"{name}={learner!r}" for name, learner in learners.items())
        return f"Representations({inner}{'' if self.is_fitted else '; not fitted'})"

    # ------------------------------------------------------------------- fitting
    def fit(self, rows: Any) -> Representations:
        """Fit every learner on its columns of ``rows`` (a DataFrame or a dict of columns).

        Parameters
        ----------
        rows : DataFrame or dict of columns
            Unlabeled rows holding the learners' input columns.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> rows = pd.DataFrame(rng.normal(size=(50, 3)), columns=["x1", "x2", "x3"])
        >>> reps = pearl.Representations({"pca": pearl.PCA(n_components=2),
        ...                               "raw": pearl.Raw(columns=["x3"])}, columns=["x1", "x2"])
        >>> reps.fit(rows)  # doctest: +NORMALIZE_WHITESPACE
        Representations(pca=PCA(n_components=2, standardize=False),
                        raw=Raw(standardize=False, columns=['x3']))
        >>> reps["pca"].components_.shape  # the fitted copy of the PCA learner
        (2, 2)
        """
        self._fit(Rows(rows), keep_blocks=False)
        return self

    def fit_transform(self, rows: Any) -> dict:
        """Fit on ``rows`` and return their blocks (the same values ``transform(rows)`` gives).

        Parameters
        ----------
        rows : DataFrame or dict of columns
            Unlabeled rows holding the learners' input columns.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> rows = pd.DataFrame(rng.normal(size=(50, 3)), columns=["x1", "x2", "x3"])
        >>> reps = pearl.Representations({"pca": pearl.PCA(n_components=2),
        ...                               "raw": pearl.Raw(columns=["x3"])}, columns=["x1", "x2"])
        >>> blocks = reps.fit_transform(rows)
        >>> {name: block.shape for name, block in blocks.items()}
        {'pca': (50, 2), 'raw': (50, 1)}
        """
        return self._fit(Rows(rows), keep_blocks=True)

    def _fit(self, table: Rows, keep_blocks: bool):
        fitted, blocks = {}, {}
        for name, template in self._learners.items():
            learner = copy.deepcopy(template)
            self._seed_learner(name, learner)
            columns = column_list(getattr(learner, "columns", None), f"representation {name!r}")
            columns = columns or self.columns or list(table.columns)
            _check_present(name, columns, table)
            kind = getattr(learner, "input_kind", None) or table.infer_kind(columns)
            if kind not in INPUT_KINDS:
                raise BlockError(
                    f"representation {name!r} has input_kind={kind!r}; use one of {INPUT_KINDS}"
                )
            X = table.input_for(name, columns, kind)
            _call(name, learner, "fit", learner.fit, X)
            spec = {"learner": learner, "columns": columns, "kind": kind, "dim": None}
            if keep_blocks:
                blocks[name] = _as_block(
                    name, _call(name, learner, "transform", learner.transform, X), table.n, None
                )
                spec["dim"] = blocks[name].shape[1]
            elif isinstance(getattr(learner, "output_dim_", None), int):
                spec["dim"] = learner.output_dim_
            else:  # width of a learner we know nothing about: project the first row
                first = X[:1] if kind != "frame" else X.iloc[:1]
                spec["dim"] = _as_block(
                    name, _call(name, learner, "transform", learner.transform, first), 1, None
                ).shape[1]
            fitted[name] = spec
        self._fitted = fitted
        return blocks

    def _seed_learner(self, name: str, learner) -> None:
        if self.seed is not None:
            seed_learner(self.seed, name, learner)

    # ---------------------------------------------------------------- transform
    def transform(self, rows: Any, names: str | Sequence[str] | None = None) -> dict:
        """Blocks of ``rows``: block name -> 2-D float64 array (or CSR matrix), in learner order.

        Parameters
        ----------
        rows : DataFrame or dict of columns
            Rows holding the columns the learners read at fit (:attr:`input_columns`).
        names : str or sequence of str, optional
            Only these blocks (``pearl.fit`` asks for the formula's; a lone str is one
            name): the other learners are not run, and the columns only they read need
            not be in *rows*.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> rows = pd.DataFrame(rng.normal(size=(50, 3)), columns=["x1", "x2", "x3"])
        >>> reps = pearl.Representations({"pca": pearl.PCA(n_components=2),
        ...                               "raw": pearl.Raw(columns=["x3"])}, columns=["x1", "x2"])
        >>> blocks = reps.fit(rows).transform(rows.head(4))
        >>> blocks["pca"].shape, blocks["raw"].shape
        ((4, 2), (4, 1))
        """
        self._require_fitted("transform()")
        chosen = self._fitted
        if names is not None:
            names = _name_list(names)
            unknown = [name for name in names if name not in self._fitted]
            if unknown:
                raise BlockError(f"Representations.transform(names=): {unknown} are not among "
                                 f"its blocks {list(self._fitted)}")
            chosen = {name: spec for name, spec in self._fitted.items() if name in names}
        table = Rows(rows)
        for name, spec in chosen.items():
            _check_present(name, spec["columns"], table)
        blocks = {}
        for name, spec in chosen.items():
            learner = spec["learner"]
            X = table.input_for(name, spec["columns"], spec["kind"])
            blocks[name] = _as_block(
                name, _call(name, learner, "transform", learner.transform, X), table.n, spec["dim"]
            )
        return blocks

    def _require_fitted(self, what: str) -> None:
        if self._fitted is None:
            raise NotFittedError(
                f"Representations.{what} needs a fitted object; call .fit(unlabeled_rows) first"
            )


def _as_learner(name: str, learner):
    if isinstance(learner, type):
        raise BlockError(
            f"representation {name!r} is the class {learner.__name__}, not a learner; "
            f"create one, e.g. {learner.__name__}(...)"
        )
    if hasattr(learner, "fit") and hasattr(learner, "transform"):
        return learner
    if callable(learner):
        return FunctionLearner(learner)
    raise BlockError(
        f"representation {name!r} is a {type(learner).__name__}; a learner needs fit(X) and "
        "transform(X) methods, or is a function of the rows"
    )


def _name_list(names: str | Sequence[str]) -> list:
    """Block names as a list; a lone str is one name (as ``columns=`` takes it), not the
    sequence of its characters (``"pca"`` would otherwise ask for blocks p, c and a)."""
    return [names] if isinstance(names, str) else list(names)


def _check_present(name: str, columns: list, table: Rows) -> None:
    missing = table.missing(columns)
    if missing:
        shown = table.columns[:20]
        more = f" and {len(table.columns) - 20} more" if len(table.columns) > 20 else ""
        raise DataError(
            f"representation {name!r} reads column(s) {missing}, which the rows do not have; "
            f"available columns: {shown}{more}"
        )


def _call(name: str, learner, stage: str, method, X):
    """Run a learner's method; errors say which representation failed."""
    try:
        return method(X)
    except MemoryError:
        raise
    except PearlError as err:
        message = f"representation {name!r} ({type(learner).__name__}) failed in {stage}: {err}"
        try:
            renamed = type(err)(message)
        except Exception:  # an exception class with a custom signature
            renamed = BlockError(message)
        raise renamed from err
    except Exception as err:
        raise BlockError(
            f"representation {name!r} ({type(learner).__name__}) "
            f"failed in {stage}: {type(err).__name__}: {err}"
        ) from err


def _as_block(name: str, value, n_rows: int, width: int | None):
    """A learner's output as a float64 2-D array or CSR matrix; its rows and width are checked."""
    who = f"representation {name!r}"
    if sp.issparse(value):
        block = sp.csr_matrix(value, dtype=np.float64)
        finite = np.isfinite(block.data)
        bad_rows = np.unique(np.repeat(np.arange(block.shape[0]), np.diff(block.indptr))[~finite])
    else:
        block = float_2d(value, BlockError, f"{who} returned values that are not numbers",
                         f"{who} must return a 2-D block (rows x features)")
        bad_rows = np.flatnonzero(~np.isfinite(block).all(axis=1))
    if block.shape[0] != n_rows:
        raise BlockError(
            f"{who} returned {block.shape[0]} rows for "
            f"{n_rows} input rows; a block has one row per row"
        )
    if width is not None and block.shape[1] != width:
        raise BlockError(f"{who} returned {block.shape[1]} columns, but it had {width} when fitted")
    if len(bad_rows):
        raise BlockError(f"{who} returned NaN or infinite values in {format_positions(bad_rows)}")
    return block


def seed_learner(seed: int, name: str, learner: Any) -> None:
    """Give *learner*, and every estimator nested in it, a seed derived from *seed* and its
    block *name*, where it has none.

    A learner whose ``seed`` (pearlstats') or ``random_state`` (scikit-learn's) is
    None would draw its own at each fit; the derived seed makes the fit repeat for
    the same *seed*, and differ between blocks (the name is part of the derivation).
    A seed the user gave the learner is kept. The estimators nested in it (the steps of
    a scikit-learn ``Pipeline``: each ``path__random_state`` of ``get_params(deep=True)``)
    are seeded by the same rule, each from its own parameter path, so two stochastic
    steps do not share a stream. *learner* is changed in place: the callers pass their
    own copy, never the user's object.
    """
    value = _derived_seed(seed, name)
    if hasattr(learner, "seed") and learner.seed is None:
        learner.seed = value
    elif hasattr(learner, "random_state") and learner.random_state is None:
        if hasattr(learner, "set_params"):
            learner.set_params(random_state=value)
        else:
            learner.random_state = value
    nested = _unseeded_nested(learner)
    if nested:
        learner.set_params(**{key: _derived_seed(seed, name, key) for key in nested})


def _derived_seed(seed: int, *keys: str) -> int:
    """A seed in [0, 2**32) from *seed* and *keys* (a block name, a parameter path): crc32,
    not hash(), so it is the same in every process."""
    spawn_key = tuple(zlib.crc32(key.encode()) for key in keys)
    return int(np.random.SeedSequence(seed, spawn_key=spawn_key).generate_state(1)[0])


def _unseeded_nested(learner: Any) -> list[str]:
    """The ``path__seed`` / ``path__random_state`` parameters of the estimators nested in
    *learner* that are None, chosen per estimator as :func:`seed_learner` chooses for the
    learner itself (``seed`` first)."""
    if isinstance(learner, type) or not (
        hasattr(learner, "get_params") and hasattr(learner, "set_params")
    ):
        return []
    by_owner: dict[str, dict[str, Any]] = {}
    for key, current in learner.get_params(deep=True).items():
        owner, _, parameter = key.rpartition("__")
        if owner and parameter in ("seed", "random_state"):
            by_owner.setdefault(owner, {})[parameter] = current
    keys = []
    for owner, found in by_owner.items():
        if "seed" in found and found["seed"] is None:
            keys.append(f"{owner}__seed")
        elif "random_state" in found and found["random_state"] is None:
            keys.append(f"{owner}__random_state")
    return keys
