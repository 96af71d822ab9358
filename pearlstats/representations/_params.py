"""scikit-learn's estimator conventions for the learners, without importing scikit-learn.

A learner stores each constructor argument, as given, under the argument's name;
:class:`LearnerParams` then gives it ``get_params`` / ``set_params``, which is all
``sklearn.base.clone``, ``GridSearchCV`` and ``Pipeline`` need. Fitted attributes
end in ``_`` and are never set by the constructor, so a clone (built from the
parameters alone) is unfitted.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from ..exceptions import OptionError

__all__ = ["LearnerParams"]


class LearnerParams:
    """``get_params`` / ``set_params`` from the constructors' signatures.

    The parameters are the named arguments of every ``__init__`` in the
    class's MRO (a subclass that passes ``**options`` on to its base has the
    base's arguments too), plus :meth:`_extra_params` for learners whose
    ``**options`` go to a library (gensim) rather than to a base class.
    """

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

    def set_params(self, **params: Any) -> LearnerParams:
        """Set constructor arguments; they are checked as the constructor checks them.

        A fitted learner keeps its fitted attributes until the next ``fit``
        (scikit-learn's behaviour). Unknown names raise
        :class:`~pearlstats.exceptions.OptionError`.

        Parameters
        ----------
        **params
            Constructor arguments by name (``name__inner`` for an argument's own
            parameters).

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
        own, nested = {}, {}
        for key, value in params.items():
            name, _, inner = key.partition("__")
            if name not in current:
                raise OptionError(
                    f"{type(self).__name__} has no parameter {name!r}; "
                    f"its parameters are {sorted(current)}"
                )
            if inner:
                nested.setdefault(name, {})[inner] = value
            else:
                own[name] = value
        for name, inner_params in nested.items():
            current[name].set_params(**inner_params)
        if own:
            # The constructor checks the new values (and raises the learner's own errors);
            # its attributes then replace the parameters, leaving fitted ones alone.
            fresh = type(self)(**{**current, **own})
            vars(self).update(vars(fresh))
        return self


def _is_default(value: Any, default: Any) -> bool:
    """Whether *value* is the argument's *default* (an array or an object that does not
    compare to it as a bool is not)."""
    if value is default:
        return True
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # numpy arrays compare elementwise
        return False
