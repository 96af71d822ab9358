"""``pearlstats.MLP``: a small neural network as every candidate's downstream model.

The paper's image and text experiments fit "either a simple MLP or
(multinomial) logistic regression" on each candidate representation set.
``fit(..., downstream=MLP())`` swaps the family's GLM for a network while the
rest of PEARL -- folds, out-of-fold predictions, simplex weights, baselines,
summary, prediction -- is unchanged. The family still fixes the response
coding and the weights' loss; the network only replaces the candidate model.

One network is trained on a set of rows (a fold's training rows in
cross-validation, all rows for the refit) as follows:

1. inputs (the candidate's covariate and block columns) are standardised with
   the mean and SD of those rows only; a gaussian response is standardised too;
2. a seeded ``validation_fraction`` of them (stratified by class) is held back;
3. Adam on shuffled mini-batches (one batch when the rows fit in
   ``batch_size``) for at most ``epochs`` epochs keeps the weights of the
   epoch with the lowest validation loss and stops after ``patience`` epochs
   without improvement. With no validation rows, the training loss decides.

=============  ========================  ==========================
family         output head               loss
=============  ========================  ==========================
gaussian       1 linear unit             squared error
binomial       1 logit                   binary cross-entropy
multinomial    one logit per class       cross-entropy
poisson        1 log-mean                Poisson negative log-lik.
=============  ========================  ==========================

Every network of one candidate uses the same seed, derived from the MLP's
``seed`` and the candidate's columns, so results depend neither on candidate
order nor on ``n_jobs``, and a fold's model is exactly the network
:meth:`MLPFamily.fit_params` trains on that fold's training rows.

torch is imported only to train; a trained network is kept as numpy arrays
and predicts with numpy, so results pickle and predict without torch.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.special import expit, softmax

from ..engines._common import EngineOutput, fold_rows
from ..exceptions import DataError, OptionError
from ..families import Family, get_family
from ..ledger import LedgerEntry
from .base import WrappedFamily

if TYPE_CHECKING:
    pass

__all__ = ["MLP", "FittedMLP", "MLPFamily", "MLPResults", "train_network"]

_FAMILIES = ("gaussian", "binomial", "multinomial", "poisson")
_MAX_LOG_MEAN = 700.0  # exp overflows float64 past ~709


def _torch_helpers():
    # Imported here, not at module level, so ``import pearlstats`` needs neither
    # torch nor the deep representation package.
    from ..representations.deep._torch import import_torch, training_session

    return import_torch("pearlstats.MLP"), training_session


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


_NUMBER_OPTIONS = {
    "lr": (lambda v: v > 0, "a positive number such as 1e-3"),
    "weight_decay": (lambda v: v >= 0, "a number >= 0"),
    "validation_fraction": (lambda v: 0 <= v < 1, "a number in [0, 1), such as 0.1"),
}


_HEADS = {
    "gaussian": "mean",
    "binomial": "logit",
    "multinomial": "class logits",
    "poisson": "log-mean",
}
_LOSS_NAMES = {
    "gaussian": "squared error of the standardised response",
    "binomial": "cross-entropy",
    "multinomial": "cross-entropy",
    "poisson": "Poisson negative log-likelihood",
}


@dataclass(frozen=True, eq=False)
class FittedMLP:
    """A trained network held as numpy arrays: the ``params`` of an MLP candidate.

    Attributes
    ----------
    family : str
    layers : tuple of (W, b)
        Weight matrix ``(out, in)`` and bias of each linear layer; ReLU between them.
    input_offset, input_scale : ndarray
        Mean and SD of the training rows' inputs, which the network sees standardised.
    target_offset, target_scale : float
        Mean and SD of a gaussian response (0 and 1 for the other families).
    train_loss, validation_loss : ndarray
        Mean loss per epoch; entry 0 is the initial network (no training loss yet).
    best_epoch : int
        Epoch whose weights were kept (0 is the initial network).
    n_train, n_validation : int
        Rows the weights were fitted on, and rows early stopping watched.
    diverged_epoch : int or None
        Epoch in which the loss became non-finite, if it did.
    """

    family: str
    layers: tuple
    input_offset: np.ndarray
    input_scale: np.ndarray
    target_offset: float
    target_scale: float
    train_loss: np.ndarray
    validation_loss: np.ndarray
    best_epoch: int
    n_train: int
    n_validation: int
    diverged_epoch: int | None

    @property
    def n_params(self) -> int:
        return int(sum(W.size + b.size for W, b in self.layers))

    @property
    def hidden(self) -> tuple:
        return tuple(W.shape[0] for W, _ in self.layers[:-1])

    @property
    def epochs_run(self) -> int:
        return len(self.train_loss) - 1

    def linear_predictor(self, X: np.ndarray) -> np.ndarray:
        """Last layer's output (mean, logit(s) or log-mean) for rows of the candidate's columns."""
        h = (np.asarray(X, dtype=float) - self.input_offset) / self.input_scale
        for W, b in self.layers[:-1]:
            h = np.maximum(h @ W.T + b, 0.0)
        W, b = self.layers[-1]
        return h @ W.T + b

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predictions with the family's meaning: mean, P(class 1) or class probabilities (n, C)."""
        eta = self.linear_predictor(X)
        if self.family == "multinomial":
            return softmax(eta, axis=1)
        eta = eta[:, 0]
        if self.family == "gaussian":
            return eta * self.target_scale + self.target_offset
        if self.family == "binomial":
            return expit(eta)
        return np.exp(np.minimum(eta, _MAX_LOG_MEAN))


class MLPResults:
    """The network of one candidate refitted on all rows; stands in for its statsmodels results.

    Attributes
    ----------
    fitted : FittedMLP
    exog_names : list of str
        The candidate's design columns, in the network's input order.

    Examples
    --------
    >>> import numpy as np
    >>> from pearlstats.downstream.mlp import MLP, train_network
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> fitted = train_network(MLP(hidden=4, epochs=5), "gaussian", X, X[:, 0], 0, 0.0, seed=0)
    >>> MLPResults(fitted, ["a", "b", "c"]).n_params  # (3*4 + 4) + (4*1 + 1)
    21
    """

    def __init__(self, fitted: FittedMLP, exog_names: Sequence[str]):
        self.fitted = fitted
        self.exog_names = list(exog_names)

    @property
    def n_params(self) -> int:
        """Number of weights and biases."""
        return self.fitted.n_params

    @property
    def history(self) -> pd.DataFrame:
        """Training and validation loss per epoch (epoch 0: the initial network)."""
        return pd.DataFrame(
            {"train_loss": self.fitted.train_loss, "validation_loss": self.fitted.validation_loss}
        ).rename_axis("epoch")

    def predict(self, exog: np.ndarray | pd.DataFrame) -> np.ndarray:
        """Predictions for rows of the candidate's design columns (a DataFrame matched by name)."""
        if isinstance(exog, pd.DataFrame):
            missing = [name for name in self.exog_names if name not in exog.columns]
            if missing:
                raise DataError(f"exog lacks the candidate's column(s) {missing}")
            exog = exog[self.exog_names]
        values = np.asarray(exog, dtype=float)
        if values.ndim != 2 or values.shape[1] != len(self.exog_names):
            raise DataError(
                f"exog must have the candidate's {len(self.exog_names)} "
                f"columns, got shape {values.shape}"
            )
        return self.fitted.predict(values)

    def __repr__(self) -> str:
        f = self.fitted
        n_out = f.layers[-1][0].shape[0]
        parts = [f"{len(self.exog_names)} inputs", *(f"{units} ReLU" for units in f.hidden)]
        parts.append(f"{n_out} {_HEADS[f.family]}")
        watched = (
            f"validation rows ({f.n_validation})"
            if f.n_validation
            else f"training rows ({f.n_train})"
        )
        stopped = f", diverged in epoch {f.diverged_epoch}" if f.diverged_epoch is not None else ""
        return (
            f"<MLPResults {f.family}: {' -> '.join(parts)}; {f.n_params} parameters; kept epoch "
            f"{f.best_epoch} of {f.epochs_run}{stopped}; {_LOSS_NAMES[f.family]} "
            f"{f.validation_loss[f.best_epoch]:.4g} on the {watched}>"
        )


class MLP:
    """A feed-forward network as the downstream model of every candidate.

    Pass it as ``pearl.fit(..., downstream=MLP(...))`` (needs the ``deep``
    extra, i.e. torch). Hidden layers use ReLU; the output head and loss
    follow the family (see the module notes).

    Parameters
    ----------
    hidden : int or sequence of int, default (64,)
        Units of each hidden layer; ``()`` gives a linear (GLM-like) network.
    epochs : int, default 200
        Most passes over the training rows.
    batch_size : int, default 64
        Rows per Adam step; all rows in one step when fewer.
    lr : float, default 1e-3
        Adam learning rate.
    weight_decay : float, default 0
        L2 penalty ``weight_decay / 2 * ||W||^2`` on the weight matrices (not
        the biases) of the network on standardised inputs. ``fit``'s ``ridge``
        is added to it, so ``ridge`` means the same as for linear candidates.
    validation_fraction : float in [0, 1), default 0.1
        Share of each training set held back for early stopping (per class
        for classification, rounded down).
    patience : int, default 10
        Epochs without a lower validation loss before training stops.
    seed : int >= 0, default 0
        Seeds the initial weights, the validation split and the batch order.

    Examples
    --------
    >>> import numpy as np, pearlstats as pearl
    >>> from pearlstats.downstream.mlp import MLP
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.normal(size=(120, 2)), rng.normal(size=(120, 2))
    >>> data = {"y": np.sin(2 * a[:, 0]) + rng.normal(scale=0.1, size=120), "a": a, "b": b}
    >>> net = MLP(hidden=16, epochs=50, seed=1)
    >>> res = pearl.fit("y ~ block(a) + block(b)", data, cv=3, seed=0, downstream=net)
    >>> round(float(res.weights.sum()), 6)
    1.0
    """

    def __init__(
        self,
        hidden: int | Sequence[int] = (64,),
        *,
        epochs: int = 200,
        batch_size: int = 64,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        validation_fraction: float = 0.1,
        patience: int = 10,
        seed: int = 0,
    ):
        self.hidden = hidden
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.seed = seed
        self._check_options()

    def __repr__(self) -> str:
        options = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"MLP({options})"

    def _check_options(self) -> None:
        """Raise OptionError naming a bad option; store ``hidden`` as a tuple of ints."""
        hidden = (self.hidden,) if _is_int(self.hidden) else self.hidden
        if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__iter__") or not all(
            _is_int(units) and units >= 1 for units in hidden
        ):
            raise OptionError(
                f"hidden={self.hidden!r}; use a number of units or "
                "a sequence of them, such as 64, (64,) or (128, 64)"
            )
        self.hidden = tuple(int(units) for units in hidden)
        for name, low in (("epochs", 1), ("batch_size", 1), ("patience", 1), ("seed", 0)):
            value = getattr(self, name)
            if not (_is_int(value) and value >= low):
                raise OptionError(f"{name}={value!r}; use an integer >= {low}")
        for name, (valid, wanted) in _NUMBER_OPTIONS.items():
            value = getattr(self, name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not (number and np.isfinite(value) and valid(value)):
                raise OptionError(f"{name}={value!r}; use {wanted}")

    def bind(self, family: str | Family) -> MLPFamily:
        """The family interface with this network as the candidate model (imports torch).

        Parameters
        ----------
        family : str or Family
            The response family (gaussian, binomial, multinomial or poisson).

        Raises
        ------
        OptionError
            For a family without an MLP head.
        MissingDependencyError
            When torch is not installed.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> family = pearl.MLP(hidden=8).bind("binomial")
        >>> family.name
        'binomial'
        """
        self._check_options()
        base = get_family(family)
        if isinstance(base, MLPFamily) or base.name not in _FAMILIES:
            raise OptionError(
                "MLP downstream models support the gaussian, binomial, "
                f"multinomial and poisson families, got {base!r}"
            )
        _torch_helpers()  # fail at fit time, not inside cross-validation, when torch is missing
        return MLPFamily(self, base)

    def candidate_seed(self, columns: np.ndarray | Sequence[int]) -> int:
        """The seed of every network of the candidate with these design columns.

        Parameters
        ----------
        columns : array_like of int
            The candidate's design columns (positions in the design matrix).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> mlp = pearl.MLP(hidden=8, seed=0)
        >>> mlp.candidate_seed([0, 1, 2]) == mlp.candidate_seed([0, 1, 2])
        True
        >>> mlp.candidate_seed([0, 1, 2]) == mlp.candidate_seed([0, 1, 3])
        False
        """
        digest = zlib.crc32(np.ascontiguousarray(columns, dtype=np.int64).tobytes())
        return int(np.random.SeedSequence([int(self.seed), digest]).generate_state(1)[0])


def _validation_rows(strata, n: int, fraction: float, rng) -> np.ndarray:
    groups = (
        [np.arange(n)]
        if strata is None
        else [np.flatnonzero(strata == c) for c in np.unique(strata)]
    )
    held = [rng.permutation(rows)[: int(np.floor(fraction * rows.size))] for rows in groups]
    return np.sort(np.concatenate(held)).astype(np.intp)


def _loss_function(torch, family: str):
    functional = torch.nn.functional
    if family == "gaussian":
        return lambda out, target: functional.mse_loss(out[:, 0], target)
    if family == "binomial":
        return lambda out, target: functional.binary_cross_entropy_with_logits(out[:, 0], target)
    if family == "multinomial":
        return functional.cross_entropy
    return lambda out, target: functional.poisson_nll_loss(
        out[:, 0], target, log_input=True, full=False
    )


def _output_bias(family: str, target: np.ndarray, n_classes: int) -> np.ndarray:
    """Start the head at the intercept-only fit, so early epochs learn structure, not the mean."""
    if family == "gaussian":
        return np.zeros(1)  # the target is standardised
    if family == "binomial":
        p = np.clip(target.mean(), 1e-3, 1 - 1e-3)
        return np.array([np.log(p / (1 - p))])
    if family == "multinomial":
        return np.log(np.clip(np.bincount(target, minlength=n_classes) / target.size, 1e-3, None))
    return np.array([np.log(max(target.mean(), 1e-8))])


def _build_network(torch, n_inputs: int, hidden: tuple, output_bias: np.ndarray):
    widths = (n_inputs, *hidden)
    layers = []
    for width_in, width_out in itertools.pairwise(widths):
        layers += [torch.nn.Linear(width_in, width_out), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(widths[-1], output_bias.size))
    network = torch.nn.Sequential(*layers)
    with torch.no_grad():
        network[-1].bias.copy_(torch.from_numpy(output_bias))
    return network


def train_network(options: MLP, family: str, X: np.ndarray, y: np.ndarray, n_classes: int,
                  ridge: float, seed: int) -> FittedMLP:
    """Train one network on rows ``X`` (the candidate's columns) and response codes ``y``.

    Never raises for a diverging fit: the result's ``diverged_epoch`` says
    when the loss became non-finite, and its weights are those of the best
    epoch before (the initial network at worst).
    """
    torch, training_session = _torch_helpers()
    offset = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    inputs = (X - offset) / scale
    target_offset, target_scale, target = 0.0, 1.0, y
    if family == "gaussian":
        target_offset, target_scale = float(y.mean()), float(y.std()) or 1.0
        target = (y - target_offset) / target_scale
    classes = family in ("binomial", "multinomial")
    rng = np.random.default_rng(seed)
    validation = _validation_rows(y.astype(np.intp) if classes else None, len(y),
                                  options.validation_fraction, rng)
    training = np.setdiff1d(np.arange(len(y)), validation)
    dtype = torch.long if family == "multinomial" else torch.float32

    def as_input(rows):
        return torch.from_numpy(inputs[rows].astype(np.float32))

    def as_target(rows):
        return torch.from_numpy(target[rows]).to(dtype)

    X_fit, y_fit = as_input(training), as_target(training)
    # Without validation rows, early stopping watches the training loss.
    X_val, y_val = ((as_input(validation), as_target(validation)) if validation.size
                    else (X_fit, y_fit))
    loss_of = _loss_function(torch, family)

    with training_session(torch, seed, torch.device("cpu")) as generator:
        bias = _output_bias(family, target[training], n_classes)
        network = _build_network(torch, inputs.shape[1], options.hidden, bias)
        weights = [p for name, p in network.named_parameters() if name.endswith("weight")]
        biases = [p for name, p in network.named_parameters() if name.endswith("bias")]
        # Adam's (coupled) weight_decay adds decay * W to the gradient: an L2 penalty
        # decay / 2 * ||W||^2.
        penalty = options.weight_decay + ridge
        optimizer = torch.optim.Adam(
            [{"params": weights, "weight_decay": penalty}, {"params": biases, "weight_decay": 0.0}],
            lr=options.lr,
        )

        def validation_loss() -> float:
            with torch.no_grad():
                return float(loss_of(network(X_val), y_val))

        best_loss = validation_loss()
        best_state = [p.detach().clone() for p in network.parameters()]
        history_train, history_val = [np.nan], [best_loss]
        best_epoch, diverged, waited = 0, None, 0
        for epoch in range(1, options.epochs + 1):
            total = 0.0
            for batch in torch.randperm(len(training),
                                        generator=generator).split(options.batch_size):
                loss = loss_of(network(X_fit[batch]), y_fit[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item() * len(batch)
            current = validation_loss()
            history_train.append(total / len(training))
            history_val.append(current)
            if not (np.isfinite(current) and np.isfinite(history_train[-1])):
                diverged = epoch
                break
            if current < best_loss:
                best_loss, best_epoch, waited = current, epoch, 0
                best_state = [p.detach().clone() for p in network.parameters()]
            else:
                waited += 1
                if waited >= options.patience:
                    break
    arrays = [p.double().numpy() for p in best_state]
    return FittedMLP(
        family=family,
        layers=tuple(zip(arrays[0::2], arrays[1::2])),
        input_offset=offset,
        input_scale=scale,
        target_offset=target_offset,
        target_scale=target_scale,
        train_loss=np.array(history_train),
        validation_loss=np.array(history_val),
        best_epoch=best_epoch,
        n_train=int(training.size),
        n_validation=int(validation.size),
        diverged_epoch=diverged,
    )


def _divergence_reason(fitted: FittedMLP, where: str) -> str:
    return (
        f"MLP training {where} diverged (non-finite loss) in epoch {fitted.diverged_epoch}; "
        "lower lr or raise weight_decay"
    )


class MLPFamily(WrappedFamily):
    """A family whose candidate model is an :class:`MLP` (made by :meth:`MLP.bind`).

    Response coding and default loss are the base family's; cross-validation
    trains one network per candidate and fold on that fold's training rows.
    """

    def __init__(self, mlp: MLP, base: Family):
        super().__init__(base)
        self.mlp = mlp

    def __repr__(self) -> str:
        return f"<{self.mlp!r} downstream, {self.name} family>"

    def _cv_predict(self, X, response, candidates, folds, ridge):
        # each fold's rows come from networks trained without them
        y, n_classes = response.y, response.n_classes
        n = len(y)
        shape = (
            (n, len(candidates), n_classes) if self.name == "multinomial" else (n, len(candidates))
        )
        predictions = np.full(shape, np.nan)
        failed = np.zeros(len(candidates), dtype=bool)
        entries = []
        for j, candidate in enumerate(candidates):
            seed = self.mlp.candidate_seed(candidate.columns)
            X_candidate = X[:, candidate.columns]
            column = np.full((n, *shape[2:]), np.nan)
            for k, test in enumerate(fold_rows(folds)):
                if test.size == 0:
                    continue
                train = np.flatnonzero(folds != k)
                fitted = train_network(
                    self.mlp, self.name, X_candidate[train], y[train], n_classes, ridge, seed
                )
                if fitted.diverged_epoch is not None:
                    failed[j] = True
                    entries.append(
                        LedgerEntry(
                            candidate.label,
                            k,
                            "cv",
                            "failed",
                            _divergence_reason(fitted, f"on fold {k}'s training rows"),
                            "given weight 0",
                            True,
                        )
                    )
                    break
                column[test] = fitted.predict(X_candidate[test])
            if not failed[j]:
                predictions[:, j] = column
        return EngineOutput(predictions, failed, entries)

    def _fit_params(self, X, response, columns, ridge, label):
        # the candidate's network trained on all rows, and a ledger note if it diverged
        fitted = train_network(
            self.mlp,
            self.name,
            X[:, columns],
            response.y,
            response.n_classes,
            ridge,
            self.mlp.candidate_seed(columns),
        )
        entries = []
        if fitted.diverged_epoch is not None:
            entries.append(
                LedgerEntry(
                    label,
                    None,
                    "refit",
                    "failed",
                    _divergence_reason(fitted, "on all rows"),
                    f"kept the weights of epoch {fitted.best_epoch}, the best before it diverged",
                    False,
                )
            )
        return fitted, entries

    def predict(self, params: FittedMLP, X_candidate: np.ndarray) -> np.ndarray:
        return params.predict(X_candidate)

    def _statsmodels_results(self, response, exog, params, ridge, scale_penalty):
        # an MLPResults describing the refitted network: no statsmodels model exists
        return MLPResults(params, list(exog.columns))
