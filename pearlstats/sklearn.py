"""PEARL as a scikit-learn estimator: :class:`PearlRegressor` and :class:`PearlClassifier`.

Both are built on :func:`pearlstats.fit`: the columns of ``X`` are dealt into
named blocks, or mapped to blocks by representation learners fitted inside the
estimator (so a ``GridSearchCV`` over a learner's parameter refits it on each
training split, without leakage), and the PEARL average over the candidate block
sets is fitted on them. The estimators work in ``Pipeline``, ``cross_val_score``,
``GridSearchCV`` and ``clone``; the full :class:`~pearlstats.PearlResults` is
``estimator.results_``.

scikit-learn is an optional dependency of pearlstats: this module imports it
and raises :class:`~pearlstats.exceptions.MissingDependencyError` without it.

Examples
--------
>>> from sklearn.datasets import load_diabetes
>>> from pearlstats.sklearn import PearlRegressor
>>> from pearlstats.representations import KernelPCA
>>> X, y = load_diabetes(return_X_y=True)
>>> model = PearlRegressor({"demo": [0, 1, 2, 3],
...                         "kpca": (KernelPCA(3, seed=0), slice(4, 10))}, random_state=0).fit(X, y)
>>> list(model.results_.weights.index)
['demo', 'kpca', 'demo+kpca']
>>> model.predict(X[:2]).shape
(2,)
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ._warnings import warn
from .checks import check_seed
from .design.candidates import candidate_block_sets
from .design.splitters import OutsideRowsError, is_splitter, removed_rows_advice
from .exceptions import (
    BlockError,
    DataError,
    FoldError,
    MissingDependencyError,
    OptionError,
    PearlError,
    ResponseError,
)
from .fitting import fit as pearl_fit
from .representations.base import seed_learner

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
    from sklearn.utils import check_random_state
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data
except ImportError as err:  # pragma: no cover - exercised only without scikit-learn
    raise MissingDependencyError(
        "pearlstats.sklearn needs scikit-learn: pip install scikit-learn "
        "(or pip install 'pearlstats[test]')"
    ) from err

__all__ = ["PearlRegressor", "PearlClassifier", "expected_failed_checks"]

# The response's name in the formula the estimators build (block names may not take it).
_RESPONSE = "y"


def _is_unset(seed: Any) -> bool:
    """True for the deprecated ``seed``'s default (not given)."""
    return isinstance(seed, str) and seed == "deprecated"


def _is_learner(value: Any) -> bool:
    return hasattr(value, "fit") and hasattr(value, "transform") and not isinstance(value, type)


# What set_params(block=...) puts in a learner block's place, as a Pipeline step takes them:
# the block's columns without the learner, or no block. The block keeps its name (as
# ("drop", columns)), so that get_params shows the marker and set_params puts a learner back.
_MARKERS = ("passthrough", "drop")


def _is_marker(value: Any) -> bool:
    return isinstance(value, str) and value in _MARKERS


class _PearlEstimator(BaseEstimator):
    """What the regressor and the classifier share: blocks from X, then ``pearl.fit``."""

    # With metadata routing on, groups routed to a search's GroupKFold are not asked for by
    # fit unless set_fit_request(groups=True) says so: the usual case (groups for the
    # search's splitter) then works without a request, as for estimators without groups.
    __metadata_request__fit = {"groups": False}

    def __init__(
        self,
        blocks: Mapping[str, Any] | None = None,
        *,
        covariates: Any = None,
        family: str = "auto",
        loss: str | None = None,
        candidates: Any = "all",
        cv: Any = 5,
        random_state: Any = None,
        ridge: float = 0.0,
        max_candidates: int | None = None,
        n_jobs: int | None = None,
        downstream: Any = None,
        honest: int | bool = 5,
        honest_se: Any = "naive",
        separation: str = "ridge",
        cv_repeats: int = 1,
        weight_shrinkage: Any = None,
        progress: bool | None = None,
        seed: Any = "deprecated",
    ):
        self.blocks = blocks
        self.covariates = covariates
        self.family = family
        self.loss = loss
        self.candidates = candidates
        self.cv = cv
        self.random_state = random_state
        self.ridge = ridge
        self.max_candidates = max_candidates
        self.n_jobs = n_jobs
        self.downstream = downstream
        self.honest = honest
        self.honest_se = honest_se
        self.separation = separation
        self.cv_repeats = cv_repeats
        self.weight_shrinkage = weight_shrinkage
        self.progress = progress
        self.seed = seed

    # ------------------------------------------------------------- parameters
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters; with ``deep``, each learner block's as ``name__param``.

        A learner given as a block (``blocks={"kpca": KernelPCA(2)}``) is a
        parameter ``kpca``, and its own parameters are ``kpca__n_components``
        and so on, as for the steps of a ``Pipeline``: a ``GridSearchCV`` can
        search them.
        """
        params = super().get_params(deep=False)
        if deep:
            for name, learner in self._learner_blocks().items():
                params[name] = learner
                if _is_marker(learner):
                    continue  # "passthrough" / "drop": no parameters of their own
                for key, value in learner.get_params(deep=True).items():
                    params[f"{name}__{key}"] = value
            for key, value in super().get_params(deep=True).items():
                params.setdefault(key, value)
        return params

    def set_params(self, **params: Any) -> _PearlEstimator:
        """Set parameters; a learner block's as ``name__param`` (or ``name`` to replace it).

        ``name`` (a learner block's name) takes another learner, ``"passthrough"`` (the
        block's columns as they are, without a learner) or ``"drop"`` (no such block), as
        a ``Pipeline`` step and a ``FeatureUnion`` part do: ``GridSearchCV`` can search
        ``{"kpca": [KernelPCA(2), "passthrough", "drop"]}``. The block keeps its name and
        columns (``blocks["kpca"]`` becomes ``("drop", columns)``), so ``get_params()``
        shows the marker and a later ``set_params(kpca=KernelPCA(2))`` puts a learner back.

        As in a ``Pipeline``, ``blocks`` is set first, then the learners given by name,
        then the rest: ``name__param`` set with ``blocks`` in one call (a search's grid
        point) sets the learner of the new blocks, and ``set_params(**other.get_params())``
        works on an estimator without those blocks.
        """
        if "blocks" in params:
            super().set_params(blocks=params.pop("blocks"))
        learners = self._learner_blocks()
        replaced = {key: params.pop(key) for key in list(params) if key in learners}
        if replaced:
            blocks = dict(self.blocks)
            for name, value in replaced.items():
                spec = blocks[name]
                columns = spec[1] if isinstance(spec, tuple) else slice(None)
                if _is_learner(value) and not isinstance(spec, tuple):
                    blocks[name] = value  # a bare learner stays bare (it reads every column)
                elif _is_marker(value) or _is_learner(value):
                    blocks[name] = (value, columns)
                else:
                    raise OptionError(
                        f"set_params({name}={value!r:.60}): block {name!r} takes a learner "
                        "(an object with fit and transform), 'passthrough' (its columns as "
                        "they are, without a learner) or 'drop' (no such block)"
                    )
            self.blocks = blocks
        return super().set_params(**params)

    def _get_params_html(self, deep: bool = True, *args: Any, **kwargs: Any) -> Any:
        """The parameter table of scikit-learn's HTML repr: the constructor's arguments.

        scikit-learn asks an estimator that is not a composite for its deep parameters,
        which would list a learner block twice (in ``blocks`` and as ``kpca``) and every
        one of its parameters (``kpca__gamma``) as set by the user: they are not
        arguments of this constructor, so they have no default here. ``get_params``
        keeps them (``GridSearchCV`` and ``clone`` read it); only the table leaves them
        out, and the deprecated ``seed`` while it is not given.
        """
        params = super()._get_params_html(False, *args, **kwargs)
        if _is_unset(self.seed):
            params.pop("seed", None)  # a ParamsDict is a UserDict; seed is not user-set here
        return params

    def _learner_blocks(self) -> dict[str, Any]:
        """Learner blocks by name; one named like a parameter is left out (``fit`` refuses
        it), so that ``get_params``/``set_params`` keep meaning the parameter."""
        if not isinstance(self.blocks, Mapping):
            return {}
        found = {}
        parameters = set(self._get_param_names())
        for name, spec in self.blocks.items():
            if name in parameters:
                continue
            learner = spec[0] if isinstance(spec, tuple) and spec else spec
            if (_is_learner(learner) and hasattr(learner, "get_params")) or (
                    isinstance(spec, tuple) and _is_marker(learner)):
                found[name] = learner
        return found

    # ------------------------------------------------------------------ blocks
    def _block_plan(self) -> dict[str, tuple[Any, np.ndarray]]:
        """Block name -> (learner or None, the columns of X it reads)."""
        specs = {"X": slice(None)} if self.blocks is None else self.blocks
        if not isinstance(specs, Mapping) or not specs:
            raise OptionError(
                "blocks must be a non-empty dict of block name -> columns of X (a list of "
                "positions or column names, a slice) or a representation learner, e.g. "
                f"{{'pca': [0, 1], 'kpca': KernelPCA(2)}}; got {type(specs).__name__}"
            )
        plan = {}
        parameters = sorted(self._get_param_names())
        for name, spec in specs.items():
            if not isinstance(name, str) or not name.isidentifier() or name == _RESPONSE:
                raise BlockError(
                    f"block name {name!r} must be a Python identifier other than "
                    f"{_RESPONSE!r} (it becomes block({name}) in the formula)"
                )
            if "__" in name:
                # set_params and GridSearchCV read name__parameter (Pipeline refuses such
                # step names too): a learner's parameters under this name could not be set
                raise BlockError(f"block name {name!r} contains '__', which set_params and "
                                 "GridSearchCV read as block__parameter; rename the block "
                                 f"(e.g. {name.replace('__', '_')!r})")
            if name in parameters:
                # get_params/set_params would mix the learner with the parameter (as Pipeline
                # refuses step names that are its parameters)
                raise BlockError(f"block name {name!r} is a parameter of {type(self).__name__}; "
                                 f"rename the block (parameters: {parameters})")
            if isinstance(spec, tuple) and not (
                    len(spec) == 2 and (_is_learner(spec[0]) or _is_marker(spec[0]))):
                raise BlockError(f"block {name!r} is a tuple {spec!r:.60}: a tuple is (learner, "
                                 "columns); give columns as a list ([0, 1] or ['age', 'sex'])")
            learner, selector = spec if isinstance(spec, tuple) else (None, spec)
            if isinstance(learner, str) and learner == "drop":
                continue
            if isinstance(learner, str) and learner == "passthrough":
                learner = None
            if learner is None and _is_learner(selector):
                learner, selector = selector, slice(None)
            plan[name] = (learner, self._columns(selector, f"block {name!r}"))
        if not plan:
            raise BlockError(f"every block is 'drop' (blocks={dict(specs)!r:.120}); keep at "
                             "least one, e.g. set_params(<block>='passthrough')")
        return plan

    def _columns(self, selector: Any, who: str) -> np.ndarray:
        """Positions in X of a selector: positions, names, a slice or a boolean mask."""
        positions = self._selected(selector, who)
        if not len(positions):
            # a block of no columns has nothing to fit (a learner on it would divide by 0)
            raise BlockError(f"{who} selects no column of X (selector {selector!r:.60}; X has "
                             f"{self.n_features_in_} columns)")
        return positions

    def _selected(self, selector: Any, who: str) -> np.ndarray:
        n = self.n_features_in_
        names = list(getattr(self, "feature_names_in_", []))
        if isinstance(selector, slice):
            return np.arange(n)[selector]
        values = [selector] if isinstance(selector, str | numbers.Integral) else list(selector)
        if values and all(isinstance(v, bool | np.bool_) for v in values):
            if len(values) != n:
                raise BlockError(f"{who}: a boolean mask needs {n} entries, one per column of X")
            return np.flatnonzero(values)
        positions = []
        for value in values:
            if isinstance(value, str):
                if value not in names:
                    raise BlockError(
                        f"{who} names column {value!r}, which X does not have; its columns are "
                        f"{names or 'unnamed (an array): select them by position'}"
                    )
                positions.append(names.index(value))
            elif isinstance(value, numbers.Integral) and -n <= value < n:
                positions.append(int(value) % n)
            else:
                raise BlockError(f"{who} selects column {value!r}; X has columns 0..{n - 1}")
        return np.asarray(positions, dtype=int)

    def _blocks_of(self, X: np.ndarray) -> dict[str, Any]:
        """The blocks (and covariates) of the rows of X, with the learners fitted at fit."""
        data = {}
        for name, (_, columns) in self.plan_.items():
            learner = self.learners_.get(name)
            data[name] = X[:, columns] if learner is None else learner.transform(X[:, columns])
        for position, column in enumerate(self.covariate_columns_):
            data[_covariate_name(position)] = X[:, column]
        return data

    # --------------------------------------------------------------------- fit
    def _fit_pearl(self, X: Any, y: np.ndarray, sample_weight: Any, family: str,
                   groups: Any = None, labels: Any = None):
        """``pearl.fit`` on the blocks of X; *labels* are X's row labels (a DataFrame's
        index, else positions), which ``results_``' row-level values carry."""
        self.plan_ = self._block_plan()
        self.covariate_columns_ = (
            np.empty(0, dtype=int) if self.covariates is None
            else self._columns(self.covariates, "covariates")
        )
        clash = sorted(set(self.plan_) & {_covariate_name(i)
                                          for i in range(len(self.covariate_columns_))})
        if clash:
            raise BlockError(f"block name(s) {clash} are the names the covariates take in the "
                             "formula (x0_, x1_, ...); rename the block(s)")
        cv = _fold_labels(self.cv, X, y)
        groups = _row_groups(groups, len(X))
        n_given = len(X)  # before the rows of sample_weight 0 are removed
        removed = None  # positions of the rows of sample_weight 0
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X)
            if np.any(sample_weight < 0):
                raise DataError(f"sample_weight has {int(np.sum(sample_weight < 0))} negative "
                                "values; a frequency weight is 0 (the row left out) or more")
            # a frequency weight of 0 is the row's absence (statsmodels' freq_weights agree)
            kept = sample_weight > 0
            removed = np.flatnonzero(~kept)
            if np.sum(kept) < 2:
                raise DataError(f"sample_weight is positive on {int(np.sum(kept))} row(s); a fit "
                                "needs at least 2 rows of positive weight (0 leaves a row out)")
            if family in ("binomial", "multinomial") and np.ptp(y[kept]) == 0:
                # y holds the codes of classes_: said in the user's labels, not as a response
                raise ResponseError(
                    f"only class {self.classes_.tolist()[y[kept][0]]!r} has rows of positive "
                    f"sample_weight (classes: {', '.join(map(repr, self.classes_.tolist()))}); "
                    "a classifier needs rows of at least 2 classes"
                )
            X, y, sample_weight = X[kept], y[kept], sample_weight[kept]
            labels = None if labels is None else labels[kept]
            cv = cv[kept] if isinstance(cv, np.ndarray) else cv
            groups = None if groups is None else groups[kept]
        seed = self._fold_seed()
        self.learners_ = {}
        for name, (learner, columns) in self.plan_.items():
            if learner is not None:
                # a learner without a seed of its own gets one derived from the fit's, as
                # Representations(seed=) gives it: the same random_state, the same fit
                fitted = clone(learner)
                seed_learner(seed, name, fitted)
                self.learners_[name] = fitted.fit(X[:, columns])
        # y by the rows' labels (the blocks beside it by position): results_.resid,
        # fittedvalues, cv_predictions and folds say which row of X each value is, also
        # when rows of sample_weight 0 were left out here
        data = {**self._blocks_of(X), _RESPONSE: pd.Series(
            y, index=pd.RangeIndex(len(y)) if labels is None else labels)}
        terms = [_covariate_name(i) for i in range(len(self.covariate_columns_))]
        terms += [f"block({name})" for name in self.plan_]
        options = {} if self.max_candidates is None else {"max_candidates": self.max_candidates}
        if self.progress is not None:
            options["progress"] = self.progress
        try:
            self.results_ = pearl_fit(
                f"{_RESPONSE} ~ " + " + ".join(terms), data, family=family, loss=self.loss,
                candidates=self.candidates, cv=cv, seed=seed, ridge=self.ridge,
                n_jobs=self.n_jobs, downstream=copy.deepcopy(self.downstream),
                honest=self.honest, honest_se=self.honest_se, separation=self.separation,
                cv_repeats=self.cv_repeats, weight_shrinkage=self.weight_shrinkage,
                weights=sample_weight, weight_type=None if sample_weight is None else "frequency",
                groups=groups, **options,
            )
        except OutsideRowsError as err:
            # the rows of sample_weight 0 were removed here, where pearl_fit cannot see them
            if n_given == len(X):
                raise
            advice = removed_rows_advice(cv, len(X), n_given, "sample_weight 0", removed)
            raise OutsideRowsError(f"{err}{advice}") from None
        return self

    def _fold_seed(self) -> int:
        """``pearl.fit``'s ``seed`` from ``random_state`` (or the deprecated ``seed``).

        An int is the seed itself; a ``RandomState`` or ``Generator`` gives one int drawn
        from it, as scikit-learn's estimators that wrap others do; None draws one from the
        OS, as ``pearl.fit`` would (recorded in ``results_.seed``). The learner blocks
        are seeded from the same int, so ``results_.seed`` repeats the whole fit.
        """
        random_state, name = self.random_state, "random_state"
        if not _is_unset(self.seed):
            if random_state is not None:
                raise OptionError("give random_state= only; seed= is its deprecated name")
            warn("seed= was renamed random_state= (scikit-learn's name) in 0.8.6 and goes in "
                 "0.10.0; pass random_state= instead", FutureWarning)
            random_state, name = self.seed, "seed"
        if random_state is None or isinstance(random_state, numbers.Integral):
            return check_seed(random_state, name)
        if isinstance(random_state, np.random.Generator):
            return int(random_state.integers(np.iinfo(np.int32).max))
        return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))

    def _predict_raw(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "results_")
        X = self._validate(X, reset=False)
        return np.asarray(self.results_.predict(self._blocks_of(X)), dtype=np.float64)

    def _validate(self, X: Any, *y: Any, **options: Any) -> Any:
        """scikit-learn's ``validate_data`` to float64; a column of text is named.

        Every column of X is read as numbers, also those no block uses: numpy's
        "could not convert string to float" would not say which column, nor what to do.
        """
        try:
            return validate_data(self, X, *y, dtype=np.float64, **options)
        except ValueError as err:
            if _is_text_vector(X):
                # a Series or list of documents: numpy's error said neither what X is nor
                # what to do, where a DataFrame of text got the message below
                raise DataError(
                    f"{type(self).__name__} reads X as a 2-D table of numbers, but X is a 1-D "
                    f"{type(X).__name__} of text ({err}). For documents, fit pearl.fit with a "
                    "Representations holding a text learner (e.g. LSI) on the column of "
                    "documents"
                ) from None
            text = _non_numeric_columns(X)
            if not text:
                raise
            raise DataError(
                f"{type(self).__name__} reads every column of X as numbers, but column(s) "
                f"{text} are not ({err}); drop or encode them first (OneHotEncoder in a "
                "Pipeline). For text, fit pearl.fit with a Representations holding a text "
                "learner (e.g. LSI) on the column of documents"
            ) from None

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        # scikit-learn's non_deterministic means "not deterministic given a fixed
        # random_state" (its checks set one): a fixed random_state fixes the folds and
        # seeds every learner block without a seed of its own, so the default False holds
        if tags.target_tags is not None and self.family == "poisson":
            tags.target_tags.positive_only = True  # as PoissonRegressor's
        return tags


class PearlRegressor(RegressorMixin, _PearlEstimator):
    """PEARL regression as a scikit-learn estimator (``pearl.fit`` on blocks of ``X``).

    Parameters
    ----------
    blocks : dict, optional
        Block name -> what the block is, in formula order:

        - columns of ``X``: a list of positions (``[0, 1]``), a ``slice``,
          a boolean mask, or column names when ``X`` is a DataFrame;
        - a representation learner (an object with ``fit``/``transform`` on
          numeric columns, such as :class:`~pearlstats.KernelPCA` or a
          scikit-learn transformer), fitted on every column of ``X`` inside
          :meth:`fit`;
        - a tuple ``(learner, columns)``: the learner on those columns.

        Every column of ``X`` is read as numbers, also one no block uses: text
        learners (:class:`~pearlstats.LSI` on a column of documents) go in
        :func:`pearlstats.fit` with a :class:`~pearlstats.Representations`.
        Default: one block of all columns. A learner's parameters are this
        estimator's ``name__parameter`` (``kpca__gamma``), searchable by
        ``GridSearchCV``, which refits the learner on each training split.
    covariates : columns of X, optional
        Ordinary covariates, in every candidate (as a formula's ``+ x`` terms).
    family : {"auto", "gaussian", "poisson"}, default "auto"
        ``"auto"`` is gaussian.
    loss, candidates, cv, ridge, max_candidates, n_jobs, downstream, honest, \
honest_se, separation, cv_repeats, weight_shrinkage
        Passed to :func:`pearlstats.fit` (``max_candidates=None``: its default).
    random_state : int, RandomState, Generator or None, default None
        Seeds the folds (:func:`pearlstats.fit`'s ``seed``): an int is that seed; a
        ``RandomState`` or ``Generator`` gives one drawn from it; None lets ``pearl.fit``
        draw one, recorded in ``results_.seed``. A learner block whose ``random_state``
        (or ``seed``) is None, and each step of a ``Pipeline`` learner whose is, gets one
        derived from it, as :class:`~pearlstats.Representations` ``(seed=)`` gives.
    progress : bool, optional
        Progress bars for the long stages (None: the package option).
    seed : int, optional
        Deprecated since 0.8.6 (removed in 0.10.0): ``random_state``, scikit-learn's name.

    Attributes
    ----------
    results_ : PearlResults
        The fit: ``results_.weights``, ``results_.summary()``, ...
    learners_ : dict
        The fitted copies of the learner blocks.
    n_features_in_, feature_names_in_
        As in scikit-learn.

    Notes
    -----
    ``sample_weight`` in :meth:`fit` is a frequency weight (in every candidate's fit
    a weight of 2 is the row twice; ``weight_type="frequency"`` in
    :func:`pearlstats.fit`); rows of weight 0 are left out, negative weights are
    refused. The folds deal rows, not copies: a row of weight 2 is in one fold, where
    two copies of it could fall in two, so with several blocks the weights and
    predictions differ from those of the duplicated rows. The learner blocks are fitted
    unweighted, each row once (a learner need not take weights): the weights enter the
    PEARL fit on their output, so with a learner block a weight of 2 is not the row
    twice in the learner's fit. Multinomial fits take no ``sample_weight``.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.model_selection import cross_val_score
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = PearlRegressor({"a": slice(0, 5), "b": slice(5, 10)}, random_state=0)
    >>> bool(cross_val_score(model, X, y, cv=3).mean() > 0.4)
    True
    """

    def fit(self, X: Any, y: Any, sample_weight: Any = None,
            groups: Any = None) -> PearlRegressor:
        """Fit PEARL on the blocks of ``X`` and the response ``y``.

        ``groups`` (one label per row of ``X``) is :func:`pearlstats.fit`'s ``groups=``:
        a group splitter's ``groups`` (``cv=GroupKFold(3)``), or with ``cv=K`` whole
        groups dealt into K folds; ``cross_val_score(..., params={"groups": g})`` passes it.
        With scikit-learn's metadata routing on, fit does not ask for ``groups`` unless
        ``set_fit_request(groups=True)`` says so (groups routed to a search's
        ``GroupKFold`` then need no request).
        """
        given = X
        X, y = self._validate(X, y, y_numeric=True, ensure_min_samples=2)
        labels = _row_labels(given, len(X))
        family = "gaussian" if self.family == "auto" else self.family
        if family not in ("gaussian", "poisson"):
            raise OptionError(
                f"PearlRegressor(family={self.family!r}); use 'gaussian' or 'poisson' "
                "(PearlClassifier for classes)"
            )
        return self._fit_pearl(X, y, sample_weight, family, groups, labels)

    def predict(self, X: Any) -> np.ndarray:
        """PEARL predictions (the mean response) for the rows of ``X``."""
        return self._predict_raw(X)


class PearlClassifier(ClassifierMixin, _PearlEstimator):
    """PEARL classification as a scikit-learn estimator (``pearl.fit`` on blocks of ``X``).

    The parameters are :class:`PearlRegressor`'s; ``family="auto"`` is
    binomial for two classes and multinomial for more.

    Attributes
    ----------
    classes_ : ndarray
        The class labels, sorted (the columns of :meth:`predict_proba`).
    results_, learners_, n_features_in_, feature_names_in_
        As for :class:`PearlRegressor`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> model = PearlClassifier({"sepal": [0, 1], "petal": [2, 3]}, ridge=0.01,
    ...                         random_state=0).fit(X, y)
    >>> model.predict_proba(X[:1]).shape, float(model.score(X, y)) > 0.9
    ((1, 3), True)
    """

    def fit(self, X: Any, y: Any, sample_weight: Any = None,
            groups: Any = None) -> PearlClassifier:
        """Fit PEARL on the blocks of ``X`` and the class labels ``y``.

        ``groups``: as in :meth:`PearlRegressor.fit`.
        """
        given = X
        X, y = self._validate(X, y, ensure_min_samples=2)
        labels = _row_labels(given, len(X))
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ResponseError(
                f"PearlClassifier needs at least 2 classes in y; got 1 class "
                f"({self.classes_[0]!r})"
            )
        family = self.family
        if family == "auto":
            family = "binomial" if len(self.classes_) == 2 else "multinomial"
        if family not in ("binomial", "multinomial"):
            raise OptionError(
                f"PearlClassifier(family={self.family!r}); use 'auto', 'binomial' or "
                "'multinomial' (PearlRegressor for a numeric response)"
            )
        if family == "binomial" and len(self.classes_) > 2:
            # scikit-learn's wording for a binary-only classifier (its checks look for it)
            raise ResponseError(
                "Only binary classification is supported by PearlClassifier(family="
                f"'binomial'); y has {len(self.classes_)} classes "
                f"({', '.join(map(repr, self.classes_[:6].tolist()))}"
                f"{', ...' if len(self.classes_) > 6 else ''}): use family='auto' or "
                "'multinomial'"
            )
        return self._fit_pearl(X, codes, sample_weight, family, groups, labels)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # ClassifierMixin's sets classifier_tags
        tags.classifier_tags.multi_class = self.family != "binomial"
        return tags

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities, one column per class of :attr:`classes_`."""
        raw = self._predict_raw(X)
        if raw.ndim == 1:  # binomial: P(second class)
            raw = np.column_stack([1.0 - raw, raw])
        return raw

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class of each row."""
        proba = self.predict_proba(X)  # first: it raises NotFittedError before fit
        return self.classes_[np.argmax(proba, axis=1)]


def _non_numeric_columns(X: Any) -> list:
    """The columns of X (names of a DataFrame, else positions) not convertible to float."""
    columns = X.items() if hasattr(X, "items") and hasattr(X, "columns") else None
    if columns is None:
        try:
            values = np.asarray(X, dtype=object)
        except (TypeError, ValueError):
            return []
        if values.ndim != 2:
            return []
        columns = enumerate(values.T)
    found = []
    for name, column in columns:
        try:
            np.asarray(column, dtype=np.float64)
        except (TypeError, ValueError):
            found.append(name)
    return found[:10]


def _is_text_vector(X: Any) -> bool:
    """Whether X is 1-D (a Series, a list) with a value that is a str and not a number."""
    try:
        values = np.asarray(X, dtype=object)
    except (TypeError, ValueError):
        return False
    if values.ndim != 1:
        return False
    for value in values:
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                return True
    return False


def _row_labels(X: Any, n: int) -> pd.Index:
    """The labels of the *n* rows of X as given: a pandas object's index where its labels are
    unique (they then say which row is which), else the positions."""
    index = getattr(X, "index", None)
    if isinstance(index, pd.Index) and index.is_unique and len(index) == n:
        return index
    return pd.RangeIndex(n)


def _covariate_name(position: int) -> str:
    """The name of covariate *position* in the formula and the data ``pearl.fit`` is given."""
    return f"x{position}_"


def _row_groups(groups: Any, n: int) -> np.ndarray | None:
    """``fit(X, y, groups=)`` as one label per row of X (checked by ``pearl.fit`` further)."""
    if groups is None:
        return None
    values = np.asarray(groups)
    if values.ndim != 1 or len(values) != n:
        raise DataError(f"groups= has shape {values.shape}; give one group label per row of X "
                        f"({n} rows)")
    return values


def _fold_labels(cv: Any, X: np.ndarray, y: np.ndarray) -> Any:
    """``cv`` as ``pearl.fit`` takes it: a list of (train, test) pairs as fold labels.

    A splitter object (``GroupKFold``, ``TimeSeriesSplit``, ...) goes to ``pearl.fit``
    as it is, which runs it with the fit's ``groups``; the pairs ``GridSearchCV``
    accepts are read here when their test sets are a partition of the rows.
    """
    if isinstance(cv, numbers.Integral | str | np.ndarray) or cv is None or is_splitter(cv):
        return cv
    labels = np.full(len(X), -1)
    pairs = list(cv)
    given = f"cv= (a {type(cv).__name__} of {len(pairs)} splits)"
    if not pairs and iter(cv) is cv:
        # a generator (KFold(3).split(X)) is read once: an earlier fit, or clone, used it up
        raise OptionError(
            f"{given}: an iterator of (train, test) pairs is read once, and an earlier fit "
            "has used this one up; give a list of the pairs (list(KFold(3).split(X))), which "
            "every fit and clone can read again, or the splitter itself (cv=KFold(3))"
        )
    trains = []
    for fold, pair in enumerate(pairs):
        train, test = (_positions(part, len(X)) for part in pair) \
            if isinstance(pair, tuple | list) and len(pair) == 2 else (None, None)
        _check_pair_range(given, fold, train, test, len(X))
        if test is None or train is None or np.any(labels[test] >= 0):
            labels = None
            break
        labels[test] = fold
        trains.append(train)
    if labels is None or np.any(labels < 0):
        raise OptionError(
            f"{given}: the test sets of the splits must be a partition of the rows (each "
            "row tested once), as KFold, StratifiedKFold and GroupKFold give; or use cv=K"
        )
    for fold, train in enumerate(trains):
        if not np.array_equal(np.sort(train), np.flatnonzero(labels != fold)):
            # fold labels would train on every other row: the gap would be lost silently
            raise OptionError(
                f"{given}: split {fold} trains on other rows than all those it does not "
                "test (a gap or an embargo); a list of pairs is read as fold labels, so give "
                "the splitter object itself (one with split and get_n_splits), which pearl.fit "
                "runs with its own training sets"
            )
    return labels


def _check_pair_range(given: str, fold: int, train: np.ndarray | None, test: np.ndarray | None,
                      n: int) -> None:
    """Refuse a pair whose positions are not rows 0..n-1 of the X fitted (numpy would raise an
    IndexError for one beyond, and count a negative one from the end)."""
    for what, rows in (("training", train), ("test", test)):
        if rows is None or not rows.size or (rows.min() >= 0 and rows.max() < n):
            continue
        if rows.min() < 0:
            raise FoldError(f"{given}: split {fold} has {what} position {int(rows.min())}; row "
                            f"positions count from the first row of X, 0..{n - 1}")
        raise FoldError(
            f"{given}: split {fold} has {what} position {int(rows.max())}, but X has {n} rows "
            f"(positions 0..{n - 1}): the pairs were made for another X. Pairs fixed in advance "
            "describe one X; where the estimator is fitted on part of it (GridSearchCV, "
            "cross_val_score) give the splitter object instead (e.g. KFold(5)), which is run on "
            "the rows each fit gets"
        )


def _positions(part: Any, n: int) -> np.ndarray | None:
    """Row positions of one side of a (train, test) pair: positions or a mask of n rows."""
    values = np.asarray(part)
    if values.dtype == bool:
        return np.flatnonzero(values) if values.shape == (n,) else None
    if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
        return None
    return values.astype(np.intp)


# scikit-learn's check_sample_weight_equivalence_on_dense_data (1.9) fits X of 15 rows and 30
# columns, weights 0..4 (9 rows of positive weight, 27 in all), with two unweighted copies of
# the rows, in three leave-one-group-out folds: the smallest training fold has 9 + 15 = 24
# distinct rows weighted and min(27 + 15, 30) = 30 rows repeated.
_CHECK_COLUMNS, _CHECK_WEIGHTED_ROWS, _CHECK_REPEATED_ROWS = 30, 24, 30


def expected_failed_checks(estimator: Any) -> dict[str, str]:
    """The scikit-learn estimator checks these estimators fail, each with the reason.

    For ``sklearn.utils.estimator_checks.check_estimator(est,
    expected_failed_checks=expected_failed_checks(est))``.
    """
    weights = "check_sample_weight_equivalence_on_dense_data"
    failed = {}
    if _has_learner_block(estimator):
        failed[weights] = (
            "the learner blocks are fitted without sample_weight (a learner need not take "
            "weights): a weight of 2 is not the row twice in their fit, only in PEARL's"
        )
    if isinstance(estimator, PearlClassifier):
        if estimator.family == "binomial":  # the checks give it two classes: all pass
            return failed
        multinomial = ("pearl.fit has no observation weights for the multinomial family yet "
                       "(the check fits sample_weight with 3 classes, or with 2 when "
                       "family='multinomial')")
        listed = ["check_sample_weights_list", weights]
        if estimator.family == "multinomial":  # then two classes are multinomial too
            listed += ["check_sample_weights_pandas_series", "check_sample_weights_not_an_array",
                       "check_sample_weights_shape", "check_sample_weights_not_overwritten"]
        return {**dict.fromkeys(listed, multinomial), **failed}
    if isinstance(estimator.ridge, numbers.Real) and estimator.ridge > 0:  # not few rows then
        return failed
    if estimator.family == "poisson":  # a Poisson candidate that wide starts on the ladder
        return failed
    if weights not in failed and _too_wide_for_the_weights_check(estimator):
        failed[weights] = (
            f"the check's smallest training fold has {_CHECK_WEIGHTED_ROWS} distinct rows "
            f"weighted and {_CHECK_REPEATED_ROWS} repeated: a least-squares candidate with at "
            "least as many coefficients as rows is refused by pearl.fit, here in the weighted "
            "fit only, or in both when every candidate is (it passes with ridge > 0; a Poisson "
            "one takes the separation ladder's ridge)"
        )
    return failed


def _has_learner_block(estimator: Any) -> bool:
    blocks = estimator.blocks
    if not isinstance(blocks, Mapping):
        return False
    return any(_is_learner(spec[0] if isinstance(spec, tuple) and spec else spec)
               for spec in blocks.values())


def _too_wide_for_the_weights_check(estimator: Any) -> bool:
    """Whether the sample-weight check's fits on its 30 columns differ (see _CHECK_COLUMNS).

    A candidate of p coefficients is refused where a training fold has at most p rows: one
    of 24 <= p < 30 only in the weighted fit (the two fits then average different
    candidates), and every candidate of 24 or more in the weighted one (it then fails).
    """
    probe = clone(estimator)
    probe.n_features_in_ = _CHECK_COLUMNS
    try:
        plan = probe._block_plan()
        covariates = (0 if estimator.covariates is None
                      else len(probe._columns(estimator.covariates, "covariates")))
    except BlockError:  # blocks the check's unnamed X cannot have: every check fails then
        return False
    widths = {name: len(columns) for name, (_, columns) in plan.items()}
    if isinstance(estimator.candidates, str) and estimator.candidates == "columns":
        sizes = range(1, sum(widths.values()) + 1)
    else:
        try:
            sets = candidate_block_sets(estimator.candidates, list(widths))
        except PearlError:  # pearl.fit refuses the candidates: every check fails then
            return False
        sizes = [sum(widths[name] for name in chosen) for chosen in sets]
    coefficients = [1 + covariates + size for size in sizes]
    refused_weighted = [p >= _CHECK_WEIGHTED_ROWS for p in coefficients]
    refused_repeated = [p >= _CHECK_REPEATED_ROWS for p in coefficients]
    return all(refused_weighted) or refused_weighted != refused_repeated
