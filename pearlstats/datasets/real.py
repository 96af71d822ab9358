"""Loaders for real data that ships inside installed packages (no downloads).

* :func:`load_digits` – scikit-learn's 8x8 handwritten digits, the small
  stand-in for the paper's MNIST example.
* :func:`load_polarity` – gensim's 200 labelled movie-review sentences from
  Pang & Lee's polarity data, the paper's Polarity example in miniature.
* :func:`load_lee_background` – gensim's Lee background corpus, 300 unlabeled
  news documents to learn Word2Vec / Doc2Vec representations on.
* :func:`load_diabetes` – scikit-learn's diabetes regression data.

The files are located through :mod:`importlib.resources`, so they are found
wherever (and however) the providing package is installed. A missing package
raises :class:`MissingDependencyError` with the ``pip`` command that fixes it.

Examples
--------
>>> frame = load_polarity()
>>> frame.shape, sorted(frame["label"].unique().tolist())
((200, 2), [0, 1])
"""

from __future__ import annotations

import importlib
from importlib import resources

import pandas as pd

from ..exceptions import DataError, MissingDependencyError, OptionError

__all__ = [
    "MissingDependencyError",
    "DIGITS_IMAGE_SHAPE",
    "load_digits",
    "load_polarity",
    "load_lee_background",
    "load_diabetes",
]

DIGITS_IMAGE_SHAPE = (8, 8)
_POLARITY_FILE = "pang_lee_polarity.cor"
_LEE_FILE = "lee_background.cor"
_POLARITY_LABELS = {"__label__neg": 0, "__label__pos": 1}


def _import(module: str, distribution: str, purpose: str):
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingDependencyError(
            f"{purpose} needs the package '{distribution}', which is not installed ({err}); "
            f"install it with: pip install {distribution}"
        ) from None


def _gensim_test_file(name: str, purpose: str) -> bytes:
    _import("gensim", "gensim", purpose)
    path = resources.files("gensim").joinpath("test", "test_data", name)
    if not path.is_file():
        # some redistributions strip gensim's test data; a plain pip install ships it
        raise MissingDependencyError(
            f"{purpose} reads gensim/test/test_data/{name}, which this gensim installation lacks; "
            "reinstall it with: pip install --force-reinstall --no-deps gensim"
        )
    return path.read_bytes()


def load_digits() -> pd.DataFrame:
    """scikit-learn's handwritten digits: 1797 images of 8x8 pixels, 10 classes.

    Returns
    -------
    DataFrame
        Columns ``p0`` ... ``p63`` (float pixel intensities 0-16; pixel
        ``(row, col)`` is ``p{8*row + col}``, so
        ``frame.iloc[i, :64].to_numpy().reshape(DIGITS_IMAGE_SHAPE)`` is image
        *i*) and ``label`` (int digit 0-9). ``frame.attrs["image_shape"]`` is
        ``(8, 8)``, also available as :data:`DIGITS_IMAGE_SHAPE`.

    Raises
    ------
    MissingDependencyError
        scikit-learn is not installed.

    Examples
    --------
    >>> frame = load_digits()
    >>> frame.shape, frame.attrs["image_shape"]
    ((1797, 65), (8, 8))
    """
    datasets = _import("sklearn.datasets", "scikit-learn", "load_digits()")
    bunch = datasets.load_digits()
    frame = pd.DataFrame(bunch.data, columns=[f"p{k}" for k in range(bunch.data.shape[1])])
    frame["label"] = bunch.target.astype("int64")
    frame.attrs["image_shape"] = DIGITS_IMAGE_SHAPE
    return frame


def load_polarity(encoding: str = "cp1252") -> pd.DataFrame:
    """gensim's 200 movie-review sentences labelled by sentiment (100 per class).

    The sentences come from Pang & Lee's sentence polarity data, shipped as
    ``gensim/test/test_data/pang_lee_polarity.cor``: one sentence per line,
    prefixed ``__label__neg`` or ``__label__pos``, lower-cased and tokenised
    with spaces.

    Parameters
    ----------
    encoding : str, default "cp1252"
        The file is single-byte Western European text. Windows-1252 agrees
        with Latin-1 on every letter in it and also reads byte 0x97 as the em
        dash its writers meant (Latin-1 gives the control character U+0097).

    Returns
    -------
    DataFrame
        ``text`` (the sentence without its label prefix, stripped) and
        ``label``: 1 for a positive review, 0 for a negative one.

    Raises
    ------
    MissingDependencyError
        gensim (or its test data) is not installed.
    OptionError
        The file does not decode with *encoding*.

    Examples
    --------
    >>> frame = load_polarity()
    >>> frame["label"].value_counts().sort_index().tolist()
    [100, 100]
    """
    raw = _gensim_test_file(_POLARITY_FILE, "load_polarity()")
    try:
        lines = raw.decode(encoding).splitlines()
    except (UnicodeDecodeError, LookupError) as err:
        raise OptionError(f"{_POLARITY_FILE} does not decode with encoding={encoding!r} ({err}); use 'cp1252'") from None
    texts, labels = [], []
    for number, line in enumerate(lines, start=1):
        prefix, _, text = line.partition(" ")
        if prefix not in _POLARITY_LABELS:
            raise DataError(f"{_POLARITY_FILE} line {number} starts with {prefix!r}, not __label__neg or __label__pos")
        texts.append(text.strip())
        labels.append(_POLARITY_LABELS[prefix])
    return pd.DataFrame({"text": texts, "label": pd.array(labels, dtype="int64")})


def load_lee_background() -> pd.DataFrame:
    """gensim's Lee background corpus: 300 unlabeled English news documents.

    Read from ``gensim/test/test_data/lee_background.cor`` (ASCII, one
    document per line); use it as the unlabeled corpus when learning
    Word2Vec or Doc2Vec representations.

    Returns
    -------
    DataFrame
        A single column ``text``, one row per document, in file order.

    Raises
    ------
    MissingDependencyError
        gensim (or its test data) is not installed.

    Examples
    --------
    >>> corpus = load_lee_background()
    >>> len(corpus), corpus.columns.tolist()
    (300, ['text'])
    """
    raw = _gensim_test_file(_LEE_FILE, "load_lee_background()")
    documents = [line.strip() for line in raw.decode("utf-8").splitlines()]
    return pd.DataFrame({"text": [doc for doc in documents if doc]})


def load_diabetes(scaled: bool = True) -> pd.DataFrame:
    """scikit-learn's diabetes data: 442 patients, 10 baseline variables, one response.

    Parameters
    ----------
    scaled : bool, default True
        Passed to scikit-learn: ``True`` gives features mean-centred and
        scaled to unit Euclidean norm (scikit-learn's default), ``False`` the
        original measurements.

    Returns
    -------
    DataFrame
        ``age, sex, bmi, bp, s1, ..., s6`` and ``progression`` (a quantitative
        measure of disease progression one year after baseline).

    Raises
    ------
    MissingDependencyError
        scikit-learn is not installed.

    Examples
    --------
    >>> frame = load_diabetes()
    >>> frame.shape, frame.columns[-1]
    ((442, 11), 'progression')
    """
    if not isinstance(scaled, bool):
        raise OptionError(f"scaled={scaled!r}; use True or False")
    datasets = _import("sklearn.datasets", "scikit-learn", "load_diabetes()")
    bunch = datasets.load_diabetes(scaled=scaled)
    frame = pd.DataFrame(bunch.data, columns=list(bunch.feature_names))
    frame["progression"] = bunch.target
    return frame
