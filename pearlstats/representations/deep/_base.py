"""What every torch learner shares: input checks, scaling, the seeded training loop, pickling.

A subclass supplies ``_build_network(input_shape)`` (an ``nn.Module`` with an
``encode`` method) and ``_loss_function(network)``, which returns
``loss(batch, generator)``. torch is
imported only inside methods, so this module loads without it.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any, Self

import numpy as np

from pearlstats.exceptions import (
    DataError,
    MissingValueError,
    NotFittedError,
    OptionError,
    format_positions,
)

from ...progress import bar_class
from .._checks import align_columns, check_seed, column_names, transactional
from .._params import LearnerParams
from ._torch import import_torch, resolve_device, training_session

ENCODERS = ("mlp", "cnn", "resnet")
SCALINGS = ("auto", "standardize", "unit", "none")


class DeepLearner(LearnerParams):
    """Base class of the torch representation learners; see :class:`Autoencoder` for the options."""

    min_rows = 1

    def __init__(
        self,
        latent_dim: int = 8,
        *,
        encoder: str = "mlp",
        hidden_dim: int = 64,
        epochs: int = 20,
        batch_size: int = 64,
        lr: float = 1e-3,
        scaling: str = "auto",
        image_shape: tuple[int, ...] | None = None,
        device: str = "auto",
        seed: int | None = None,
        progress: bool = True,
        columns: str | Sequence[str] | None = None,
    ):
        self.latent_dim = latent_dim
        self.encoder = encoder
        self.hidden_dim = hidden_dim
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.scaling = scaling
        self.image_shape = image_shape
        self.device = device
        self.seed = seed
        self.progress = progress
        self.columns = columns
        self._net = None
        self._net_state = None
        # Subclasses set their own options before calling this, so every option is checked now
        # (scikit-learn style); fit() checks again in case an attribute was changed since.
        self._check_options()

    @property
    def seed_(self) -> int:
        """The seed training uses: ``seed``, or 0 when it is None and no container set one.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(64, 6))
        >>> pearl.Autoencoder().seed_, pearl.Autoencoder(seed=7).seed_
        (0, 7)
        """
        return 0 if self.seed is None else int(self.seed)

    def __repr__(self):
        defaults = {}
        for cls in reversed(type(self).__mro__[:-1]):
            if "__init__" not in vars(cls):  # a mixin without a constructor of its own
                continue
            for name, parameter in inspect.signature(cls.__init__).parameters.items():
                if name != "self" and parameter.kind is not parameter.VAR_KEYWORD:
                    defaults[name] = parameter.default
        changed = [
            f"{name}={getattr(self, name)!r}"
            for name, default in defaults.items()
            if getattr(self, name) != default
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    # ----------------------------------------------------------------- public API
    @transactional
    def fit(self, X: Any, y: Any = None) -> Self:
        """Train on the rows of ``X`` (2-D flattened, 3-D ``(n, h, w)`` or 4-D ``(n, c, h, w)``).

        If ``fit`` raises (bad input, divergence, an interrupt), the learner keeps its
        previous fit, or stays unfitted.

        Parameters
        ----------
        X : array_like
            Training rows: 2-D (flattened), 3-D ``(n, h, w)`` or 4-D ``(n, c, h, w)``.
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(64, 6))
        >>> ae = pearl.Autoencoder(latent_dim=2, epochs=2, progress=False).fit(X)
        >>> len(ae.loss_history_)
        2
        """
        torch = import_torch(type(self).__name__)
        self._check_options()
        array = self._as_array(X)
        if len(array) < self.min_rows:
            raise DataError(
                f"{type(self).__name__} needs at least "
                f"{self.min_rows} rows to fit, got {len(array)}"
            )
        self._forget()
        self.feature_names_in_ = column_names(X)
        self.input_shape_ = self._fit_input_shape(array)
        self.n_features_in_ = math.prod(self.input_shape_)
        self._fit_scaling(array.reshape(len(array), -1))
        data = self._tensor(torch, array)
        device = resolve_device(torch, self.device)
        with training_session(torch, self.seed_, device) as generator:
            network = self._build_network(self.input_shape_).to(device)
            self.loss_history_ = self._train(torch, network, data, device, generator)
        self._check_weights(torch, network)
        self._net, self.device_ = network.eval(), str(device)
        self.output_dim_ = self.latent_dim  # the block's width (get_feature_names_out)
        return self

    def _check_weights(self, torch, network):
        """Refuse NaN or infinite weights: finite losses can still end in overflowed weights."""
        bad = [name for name, value in network.state_dict().items()
               if value.is_floating_point() and not torch.isfinite(value).all()]
        if bad:
            raise OptionError(
                f"{type(self).__name__} training diverged: the weights {bad[:3]} are NaN or "
                f"infinite after {self.epochs} epoch(s); lower lr (now {self.lr}) or check the "
                "input scaling"
            )

    def transform(self, X: Any) -> np.ndarray:
        """The learned representation of each row: a float64 array of shape ``(n, latent_dim)``.

        Parameters
        ----------
        X : array_like
            Rows shaped like the training inputs.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(64, 6))
        >>> ae = pearl.Autoencoder(latent_dim=2, epochs=2, progress=False).fit(X)
        >>> ae.transform(X[:5]).shape
        (5, 2)
        """
        self._check_fitted()
        torch = import_torch(type(self).__name__)
        network = self._network(torch)
        data = self._tensor(torch, self._as_array(align_columns(X, self, type(self).__name__)))
        device = next(network.parameters()).device
        with torch.no_grad():
            parts = [
                network.encode(part.to(device)).cpu()
                for part in data.split(max(self.batch_size, 256))
            ]
        return torch.cat(parts).double().numpy()

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray:
        """``fit(X)`` then ``transform(X)``.

        Parameters
        ----------
        X : array_like
            Training rows: 2-D (flattened), 3-D ``(n, h, w)`` or 4-D ``(n, c, h, w)``.
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(64, 6))
        >>> pearl.VAE(latent_dim=3, epochs=2, progress=False).fit_transform(X).shape
        (64, 3)
        """
        return self.fit(X).transform(X)

    # ------------------------------------------------------------------- checks
    def _check_options(self):
        for name, low in (
            ("latent_dim", 1),
            ("hidden_dim", 1),
            ("epochs", 0),
            ("batch_size", self.min_rows),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise OptionError(f"{name}={value!r} must be an integer >= {low}")
        if (isinstance(self.lr, bool) or not isinstance(self.lr, (int, float, np.floating))
                or not 0 < self.lr < math.inf):
            raise OptionError(f"lr={self.lr!r} must be a finite positive number, e.g. 1e-3")
        if self.encoder not in ENCODERS:
            raise OptionError(f"encoder={self.encoder!r} is not one of {ENCODERS}")
        if self.scaling not in SCALINGS:
            raise OptionError(f"scaling={self.scaling!r} is not one of {SCALINGS}")
        check_seed(self.seed)
        if not isinstance(self.progress, (bool, np.bool_)):
            raise OptionError(f"progress={self.progress!r} must be True or False")
        if self.image_shape is not None:
            shape = self.image_shape
            if (
                not isinstance(shape, (tuple, list))
                or len(shape) not in (2, 3)
                or not all(isinstance(s, (int, np.integer)) and s > 0 for s in shape)
            ):
                raise OptionError(
                    f"image_shape={shape!r} must be (h, w) or (c, h, w) with positive integers"
                )

    def _as_array(self, X):
        if np.iscomplexobj(X):  # numpy would drop the imaginary parts with only a warning
            raise DataError(
                f"{type(self).__name__} needs real numbers, but got complex values; pass the "
                "real and imaginary parts as separate columns"
            )
        try:
            array = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise DataError(
                f"{type(self).__name__} needs numeric inputs; "
                f"could not convert them to floats ({err})"
            ) from err
        if array.ndim not in (2, 3, 4) or len(array) == 0:
            raise DataError(
                f"{type(self).__name__} needs a non-empty 2-D (n, features), 3-D (n, h, w) or 4-D "
                f"(n, c, h, w) array, got shape {array.shape}"
            )
        bad = ~np.isfinite(array.reshape(len(array), -1)).all(axis=1)
        if bad.any():
            raise MissingValueError(
                f"{type(self).__name__} got NaN or infinite values in "
                f"{format_positions(np.flatnonzero(bad))}; drop or impute them first"
            )
        return array

    def _fit_input_shape(self, array):
        declared = None
        if self.image_shape is not None:
            declared = tuple(int(s) for s in self.image_shape)
            declared = (1, *declared) if len(declared) == 2 else declared
        if array.ndim == 2:
            columns = array.shape[1]
            if declared is None:
                if self.encoder != "mlp":
                    raise OptionError(
                        f"encoder={self.encoder!r} needs images: pass image_shape=(h, w) or (c, h, "
                        f"w) for the {columns} input columns, or give a 3-D (n, h, w) or 4-D (n, "
                        "c, h, w) array"
                    )
                return (columns,)
            if math.prod(declared) != columns:
                raise DataError(
                    f"image_shape={tuple(self.image_shape)} holds {math.prod(declared)} values per "
                    f"row but the input has {columns} columns"
                )
            return declared
        shape = (1, *array.shape[1:]) if array.ndim == 3 else tuple(array.shape[1:])
        if declared is not None and declared != shape:
            raise DataError(
                f"image_shape={tuple(self.image_shape)} does "
                f"not match the images' shape {array.shape[1:]}"
            )
        return shape

    def _forget(self):
        for name in [n for n in vars(self) if n.endswith("_") and not n.startswith("_")]:
            delattr(self, name)
        self._net = self._net_state = None

    def _check_fitted(self):
        if not hasattr(self, "input_shape_"):
            raise NotFittedError(
                f"{type(self).__name__} is not fitted yet; call fit(X) on the unlabeled rows first"
            )

    # ------------------------------------------------------------ scaling, data
    def _fit_scaling(self, flat):
        method = self.scaling
        if method == "auto":
            method = "unit" if len(self.input_shape_) == 3 else "standardize"
        if method == "standardize":
            offset, spread = flat.mean(axis=0), flat.std(axis=0)
        elif method == "unit":
            # One affine map for all pixels keeps relative intensities, which per-pixel scaling
            # would destroy.
            offset, spread = flat.min(), flat.max() - flat.min()
        else:
            offset, spread = 0.0, 1.0
        self.scaling_ = method
        self.input_offset_ = np.asarray(offset, dtype=np.float64)
        self.input_scale_ = np.where(
            np.asarray(spread) > 0, spread, 1.0
        )  # constant inputs stay finite

    def _tensor(self, torch, array):
        """Scaled float32 tensor of shape ``(n, *input_shape_)``; checks the shape vs the fit."""
        self._check_fitted()
        accepted = {(self.n_features_in_,), self.input_shape_}
        if self.input_shape_[0] == 1 and len(self.input_shape_) == 3:
            accepted.add(self.input_shape_[1:])  # single-channel images may come as (n, h, w)
        if array.shape[1:] not in accepted:
            raise DataError(
                f"{type(self).__name__} was fitted on rows of shape {self.input_shape_} "
                f"({self.n_features_in_} values) but got rows of shape {array.shape[1:]}"
            )
        flat = array.reshape(len(array), -1)
        scaled = (flat - self.input_offset_) / self.input_scale_
        return torch.from_numpy(scaled.reshape(len(array), *self.input_shape_).astype(np.float32))

    # ---------------------------------------------------------------- training
    def _train(self, torch, network, data, device, generator):
        tqdm = bar_class()  # not tqdm.auto: see pearlstats.progress.bar_class
        batch_loss = self._loss_function(network)
        optimizer = torch.optim.Adam(network.parameters(), lr=self.lr)
        history = []
        epochs = tqdm(
            range(self.epochs), desc=type(self).__name__, unit="epoch", disable=not self.progress
        )
        for epoch in epochs:
            network.train()
            total = 0.0
            for index in self._batches(torch, len(data), generator):
                loss = batch_loss(data[index].to(device), generator)
                if not torch.isfinite(loss):
                    raise OptionError(
                        f"{type(self).__name__} training diverged (loss {loss.item()}) in epoch "
                        f"{epoch + 1}; lower lr (now {self.lr}) or check the input scaling"
                    )
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item() * len(index)
            history.append(total / len(data))
            epochs.set_postfix(loss=f"{history[-1]:.4g}")
        return history

    def _batches(self, torch, n, generator):
        batches = list(torch.randperm(n, generator=generator).split(self.batch_size))
        if len(batches) > 1 and len(batches[-1]) < max(self.min_rows, 2):
            # A lone last row gives a noisy step (and no negatives for contrastive losses):
            # fold it in.
            batches[-2:] = [torch.cat(batches[-2:])]
        return batches

    # ----------------------------------------------------------------- pickling
    def _network(self, torch):
        """The trained module, rebuilt from its saved weights after unpickling."""
        self._check_fitted()
        if self._net is None:
            with torch.random.fork_rng(
                devices=[]
            ):  # building re-initialises weights; keep the user's RNG
                network = self._build_network(self.input_shape_)
            network.load_state_dict(
                {key: torch.from_numpy(value) for key, value in self._net_state.items()}
            )
            device = resolve_device(torch, self.device)
            self._net, self._net_state, self.device_ = network.to(device).eval(), None, str(device)
        return self._net

    def __getstate__(self):
        state = self.__dict__.copy()
        network = state.pop("_net", None)
        if network is not None:
            # numpy weights load on any machine, with or without the GPU the model was trained on.
            state["_net_state"] = {
                k: v.detach().cpu().numpy().copy() for k, v in network.state_dict().items()
            }
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._net = None


class ReconstructingLearner(DeepLearner):
    """A learner with a decoder: adds :meth:`inverse_transform`."""

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        """Decode latent codes to flattened input rows ``(n, n_features_in_)`` in input units.

        Parameters
        ----------
        Z : array_like (n, latent_dim)
            Latent codes, as :meth:`transform` returns.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(64, 6))
        >>> ae = pearl.Autoencoder(latent_dim=2, epochs=2, progress=False).fit(X)
        >>> ae.inverse_transform(ae.transform(X[:5])).shape
        (5, 6)
        """
        self._check_fitted()
        torch = import_torch(type(self).__name__)
        network = self._network(torch)
        codes = np.asarray(Z, dtype=np.float64)
        if codes.ndim != 2 or codes.shape[1] != self.latent_dim:
            raise DataError(
                f"inverse_transform needs a 2-D array with latent_dim={self.latent_dim} columns, "
                f"got shape {codes.shape}"
            )
        device = next(network.parameters()).device
        with torch.no_grad():
            decoded = (
                network.decode(torch.from_numpy(codes.astype(np.float32)).to(device))
                .cpu()
                .double()
                .numpy()
            )
        return decoded * self.input_scale_ + self.input_offset_
