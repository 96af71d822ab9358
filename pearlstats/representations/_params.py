"""scikit-learn's estimator conventions for the learners, without importing scikit-learn.

A learner stores each constructor argument, as given, under the argument's name;
:class:`LearnerParams` then gives it ``get_params`` / ``set_params`` (what
``sklearn.base.clone`` and ``GridSearchCV`` need). Fitted attributes end in ``_``
and are never set by the constructor, so a clone (built from the parameters alone)
is unfitted. For a step of a ``Pipeline`` a learner's ``fit`` and ``fit_transform``
take (and ignore) ``y``, and :class:`LearnerParams` gives it
``get_feature_names_out`` and ``set_output``.

scikit-learn is an optional dependency, so ``set_output`` is implemented here
rather than taken from scikit-learn's mixin: it stores the choice where
scikit-learn's ``clone`` copies it from (``_sklearn_output_config``) and reads
scikit-learn's global ``transform_output`` only when scikit-learn is already
imported (it cannot have been set otherwise).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..exceptions import DataError, MissingDependencyError, NotFittedError, OptionError

__all__ = ["LearnerParams"]

# set_output's containers (scikit-learn's names); "default" is the learner's own output
# (a float64 array, or a CSR matrix for the word-count blocks) unless scikit-learn's global
# transform_output says otherwise.
OUTPUT_CONTAINERS = ("default", "pandas", "polars")


class LearnerParams:
    """``get_params`` / ``set_params`` from the constructors' signatures.

    The parameters are the named arguments of every ``__init__`` in the
    class's MRO (a subclass that passes ``**options`` on to its base has the
    base's arguments too), plus :meth:`_extra_params` for learners whose
    ``**options`` go to a library (gensim) rather than to a base class.

    A subclass's own ``transform`` and ``fit_transform`` are wrapped (as
    scikit-learn's ``set_output`` mixin wraps them) to return the container
    :meth:`set_output` chose.
    """

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        for method in ("transform", "fit_transform"):
            function = cls.__dict__.get(method)
            if callable(function) and not getattr(function, "_wraps_output", False):
                setattr(cls, method, _wrap_output(function))

    @classmethod
    def _signature(cls) -> dict[str, inspect.Parameter]:
        """The named arguments of every ``__init__`` in the MRO (the most derived first)."""
        parameters: dict[str, inspect.Parameter] = {}
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None or klass is object:
                continue
            for name, parameter in inspect.signature(init).parameters.items():
                if name != "self" and parameter.kind not in (
                    parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL
                ):
                    parameters.setdefault(name, parameter)
        return parameters

    @classmethod
    def _param_names(cls) -> list[str]:
        return sorted(cls._signature())

    def _extra_params(self) -> dict[str, Any]:
        """Keyword options beyond the named arguments (none unless a learner says so)."""
        return {}

    @classmethod
    def _option_names(cls) -> list[str]:
        """Every keyword option the constructor's ``**options`` take (gensim's, or TfIdf's for
        :class:`LSI`), set or not: :meth:`set_params` takes them as the constructor does, so
        a grid search may vary one a default learner was built without."""
        return []

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments, as given (scikit-learn's convention).

        Parameters
        ----------
        deep : bool, default True
            Also return the parameters of arguments that are estimators
            themselves, as ``name__parameter``.

        Returns
        -------
        dict
            Parameter name -> value; ``type(self)(**self.get_params(deep=False))``
            builds an unfitted copy.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> pearl.PCA(n_components=3).get_params()
        {'columns': None, 'n_components': 3, 'standardize': False}
        """
        params = {name: getattr(self, name) for name in self._param_names()}
        params.update(self._extra_params())
        if deep:
            for name, value in list(params.items()):
                if hasattr(value, "get_params") and not isinstance(value, type):
                    for inner, inner_value in value.get_params(deep=True).items():
                        params[f"{name}__{inner}"] = inner_value
        return params

    def _changed_params(self, *shown: str) -> dict[str, Any]:
        """The constructor arguments other than *shown* whose value is not the default,
        for a repr that names what makes this learner differ (scikit-learn's
        ``print_changed_only``): a seed, a gamma, the columns."""
        changed = {}
        for name, parameter in self._signature().items():
            if name in shown or parameter.default is parameter.empty or not hasattr(self, name):
                continue
            value = getattr(self, name)
            if not _is_default(value, parameter.default):
                changed[name] = value
        return changed

    def _repr(self, *head: str, exclude: Sequence[str] = (), **shown: Any) -> str:
        """``Name(*head, shown..., every other argument not at its default)``: two learners
        that transform differently never print alike (a seed, a gamma, gensim options).
        *head* are shown as they are (a function's name); *exclude* names arguments they show.
        """
        others = {**self._changed_params(*shown, *exclude), **self._extra_params()}
        items = {**shown, **{k: v for k, v in others.items() if k not in shown}}
        text = ", ".join([*head, *(f"{name}={value!r}" if isinstance(value, str)
                                   else f"{name}={value}" for name, value in items.items())])
        return f"{type(self).__name__}({text})"

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags of a transformer (read only by scikit-learn, so imported here)."""
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        text = getattr(self, "input_kind", None) == "text"
        return Tags(
            estimator_type=None,
            target_tags=TargetTags(required=False),
            transformer_tags=TransformerTags(),
            input_tags=InputTags(two_d_array=not text, string=text),
        )

    # ------------------------------------------------- a scikit-learn transformer
    def _output_width(self) -> int:
        """The block's width once fitted (``output_dim_``); refused before ``fit``."""
        width = getattr(self, "output_dim_", None)
        if width is None:
            raise NotFittedError(
                f"{type(self).__name__} is not fitted yet; call fit() before "
                "get_feature_names_out()"
            )
        return width

    def _output_names(self, width: int, input_features: list | None) -> list[str]:
        """``prefix[j]`` for column j: how pearlstats names the columns of a block called
        *prefix* in coefficient tables (``block(pca)`` has ``pca[0]``, ``pca[1]``, ...)."""
        prefix = type(self).__name__.lower()
        return [f"{prefix}[{j}]" for j in range(width)]

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the output columns (scikit-learn's transformer convention).

        Column ``j`` of a block is ``prefix[j]``, the learner's class name in lower
        case as the prefix (``pca[0]``, ``kernelpca[1]``): pearlstats names the
        columns of a block called ``pca`` so in coefficient tables. :class:`Raw`
        keeps its input columns: ``raw[age]`` (``raw[0]`` for an array).

        Parameters
        ----------
        input_features : list of str, optional
            The input column names (a ``Pipeline`` passes the previous step's).
            Checked against the columns seen at fit: their number, and their names
            when the fit was on a DataFrame.

        Returns
        -------
        ndarray of str (object dtype)

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            ``input_features`` are not the columns seen at fit.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(30, 3))
        >>> pearl.PCA(n_components=2).fit(X).get_feature_names_out()
        array(['pca[0]', 'pca[1]'], dtype=object)
        """
        width = self._output_width()
        names = self._check_input_features(input_features)
        return np.asarray(self._output_names(width, names), dtype=object)

    def _check_input_features(self, input_features: Any) -> list | None:
        """``input_features`` as a list, checked against the fit's columns (scikit-learn's rule:
        the fitted names if there are any, else their number)."""
        if input_features is None:
            return None
        names = list(np.asarray(input_features, dtype=object).ravel())
        who = f"{type(self).__name__}.get_feature_names_out"
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None and names != list(fitted):
            raise DataError(
                f"{who}: input_features {names} are not the columns it was fitted on, "
                f"{list(fitted)}; give those (or None)"
            )
        width = getattr(self, "n_features_in_", None)
        if width is not None and len(names) != width:
            raise DataError(
                f"{who}: input_features has {len(names)} name(s), but it was fitted on "
                f"{width} input column(s); give {width} names (or None)"
            )
        return names

    def set_output(self, *, transform: str | None = None) -> LearnerParams:
        """Choose the container ``transform`` and ``fit_transform`` return.

        scikit-learn's transformer API (``Pipeline.set_output`` calls it on each step).
        The columns are :meth:`get_feature_names_out`'s; a DataFrame input's index
        is kept.

        Parameters
        ----------
        transform : {"default", "pandas", "polars"} or None
            ``"default"``: the learner's own output (a float64 array, or a CSR matrix
            for :class:`BagOfWords` and :class:`TfIdf`), unless scikit-learn's
            global ``set_config(transform_output=...)`` says otherwise (a sparse
            block stays sparse then); ``"pandas"``: a DataFrame; ``"polars"``: a
            polars DataFrame (polars must be installed); None leaves the choice
            unchanged. A sparse block has no DataFrame form: ``"pandas"`` and
            ``"polars"`` refuse it on :meth:`transform`.

        Returns
        -------
        self

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(30, 3))
        >>> scores = pearl.PCA(n_components=2).set_output(transform="pandas").fit_transform(X)
        >>> list(scores.columns), scores.shape
        (['pca[0]', 'pca[1]'], (30, 2))
        """
        if transform is None:
            return self
        if not isinstance(transform, str) or transform not in OUTPUT_CONTAINERS:
            raise OptionError(
                f"{type(self).__name__}.set_output(transform={transform!r}); use one of "
                f"{list(OUTPUT_CONTAINERS)}, or None to leave it unchanged"
            )
        # scikit-learn's attribute: its clone() copies it to the copy
        self._sklearn_output_config = {
            **getattr(self, "_sklearn_output_config", {}), "transform": transform
        }
        return self

    def set_params(self, **params: Any) -> LearnerParams:
        """Set constructor arguments; they are checked as the constructor checks them.

        A fitted learner keeps its fitted attributes until the next ``fit``
        (scikit-learn's behaviour). Unknown names raise
        :class:`~pearlstats.exceptions.OptionError`.

        Parameters
        ----------
        **params
            Constructor arguments by name (``name__inner`` for an argument's own
            parameters), including the options a constructor's ``**options`` take
            (gensim's for :class:`~pearlstats.Word2Vec`, ``negative=5``), also one the
            learner was built without; :meth:`get_params` then reports it.

        Returns
        -------
        self

        Examples
        --------
        >>> import pearlstats as pearl
        >>> pearl.PCA().set_params(n_components=3, standardize=True)
        PCA(n_components=3, standardize=True)
        """
        if not params:
            return self
        current = self.get_params(deep=False)
        options = set(self._option_names()) - set(current)
        own, nested = {}, {}
        for key, value in params.items():
            name, _, inner = key.partition("__")
            if name not in current and (inner or name not in options):
                takes = f", and the options {sorted(options)}" if options else ""
                raise OptionError(
                    f"{type(self).__name__} has no parameter {key!r}; "
                    f"its parameters are {sorted(current)}{takes}"
                )
            if inner:
                nested.setdefault(name, {})[inner] = value
            else:
                own[name] = value
        for name, inner_params in nested.items():
            if not hasattr(current[name], "set_params"):
                raise OptionError(
                    f"{type(self).__name__}'s parameter {name!r} is {current[name]!r}, which has "
                    f"no parameters of its own: {name}__{next(iter(inner_params))} sets nothing; "
                    f"set {name}= itself"
                )
            current[name].set_params(**inner_params)
        if own:
            # The constructor checks the new values (and raises the learner's own errors);
            # its attributes then replace the parameters, leaving fitted ones alone.
            fresh = type(self)(**{**current, **own})
            vars(self).update(vars(fresh))
        return self


def _wrap_output(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` (a ``transform`` or ``fit_transform``) returning the chosen container."""

    @functools.wraps(method)
    def wrapper(self, X: Any, *args: Any, **kwargs: Any) -> Any:
        data = method(self, X, *args, **kwargs)
        chosen = getattr(self, "_sklearn_output_config", {}).get("transform", "default")
        container = _global_container() if chosen == "default" else chosen
        # a DataFrame already: fit_transform's call of the (wrapped) transform made it
        if container == "default" or isinstance(data, pd.DataFrame):
            return data
        if sp.issparse(data) and chosen == "default":
            # scikit-learn's global setting leaves a sparse block sparse (LSI's own TF-IDF,
            # a TfIdf block of Representations); only this learner's set_output refuses it
            return data
        return _as_container(self, data, X, container)

    wrapper._wraps_output = True
    return wrapper


def _global_container() -> str:
    """scikit-learn's global ``transform_output``; it can only have been set if scikit-learn
    is imported, so it is not imported here."""
    get_config = getattr(sys.modules.get("sklearn"), "get_config", None)
    return "default" if get_config is None else get_config().get("transform_output", "default")


def _as_container(learner: LearnerParams, data: Any, X: Any, container: str) -> Any:
    """A learner's block as a pandas or polars DataFrame named by its output names."""
    who = type(learner).__name__
    if sp.issparse(data):
        # scikit-learn's transformers refuse sparse data in a DataFrame too
        raise OptionError(
            f"{who} returns a sparse block ({data.shape[1]} columns), which "
            f"set_output(transform={container!r}) cannot hold; use set_output(transform="
            "'default') for the CSR matrix, or a dense learner (pearl.LSI)"
        )
    data = np.asarray(data)
    names = learner._output_names(data.shape[1], getattr(learner, "feature_names_in_", None))
    if container == "polars":
        try:
            import polars
        except ImportError as err:
            raise MissingDependencyError(
                f"{who}.set_output(transform='polars') needs polars: pip install polars"
            ) from err
        return polars.from_numpy(data, schema=names, orient="row")
    # the rows keep the input's labels, as scikit-learn's pandas output does
    index = X.index if isinstance(X, pd.DataFrame | pd.Series) and len(X) == len(data) else None
    return pd.DataFrame(data, columns=names, index=index)


def _is_default(value: Any, default: Any) -> bool:
    """Whether *value* is the argument's *default* (an array or an object that does not
    compare to it as a bool is not)."""
    if value is default:
        return True
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # numpy arrays compare elementwise
        return False
