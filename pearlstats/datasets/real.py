"""Loaders for real data that ships inside installed packages (no downloads).

* :func:`load_digits` – scikit-learn's 8x8 handwritten digits, the small
  stand-in for the paper's MNIST example.
* :func:`load_polarity` – gensim's 200 labelled movie-review sentences from
  Pang & Lee's polarity data, the paper's Polarity example in miniature.
* :func:`load_lee_background` – gensim's Lee background corpus, 300 unlabeled
  news documents to learn Word2Vec / Doc2Vec representations on.
* :func:`load_diabetes` – scikit-learn's diabetes regression data.
* :func:`fashion_mnist` – Zalando's Fashion-MNIST (70 000 28x28 grey images of
  clothing, 10 classes), read from the IDX files of Debian's
  ``dataset-fashion-mnist`` package (or any folder holding them).

The files are located through :mod:`importlib.resources`, so they are found
wherever (and however) the providing package is installed. A missing package
raises :class:`MissingDependencyError` with the ``pip`` (or, for Fashion-MNIST,
``apt-get``) command that fixes it.

Examples
--------
>>> frame = load_polarity()
>>> frame.shape, sorted(frame["label"].unique().tolist())
((200, 2), [0, 1])
"""

from __future__ import annotations

import gzip
import importlib
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ..exceptions import DataError, MissingDependencyError, OptionError

__all__ = [
    "DIGITS_IMAGE_SHAPE",
    "FASHION_MNIST_CLASSES",
    "FashionMNIST",
    "MissingDependencyError",
    "fashion_mnist",
    "load_diabetes",
    "load_digits",
    "load_lee_background",
    "load_polarity",
    "read_idx",
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
        raise OptionError(
            f"{_POLARITY_FILE} does not decode with encoding={encoding!r} ({err}); use 'cp1252'"
        ) from None
    texts, labels = [], []
    for number, line in enumerate(lines, start=1):
        prefix, _, text = line.partition(" ")
        if prefix not in _POLARITY_LABELS:
            raise DataError(
                f"{_POLARITY_FILE} line {number} starts with {prefix!r}, "
                "not __label__neg or __label__pos"
            )
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
    OptionError
        *scaled* is not ``True`` or ``False``.
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


# ---------------------------------------------------------------- Fashion-MNIST

FASHION_MNIST_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)
"""Class names of Fashion-MNIST, indexed by label (label 0 is ``"T-shirt/top"``)."""

FASHION_MNIST_PACKAGE = "dataset-fashion-mnist"
_FASHION_FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
# IDX type codes (third byte of the magic number) and the big-endian numpy types they stand for
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_APT_HINT = f"install it with: apt-get install {FASHION_MNIST_PACKAGE}"


@dataclass(frozen=True)
class FashionMNIST:
    """Fashion-MNIST images and labels, as read by :func:`fashion_mnist`.

    Attributes
    ----------
    train_images, test_images : ndarray of uint8, shape (N, 28, 28)
        Grey levels 0 (background) to 255; 60 000 training and 10 000 test images.
    train_labels, test_labels : ndarray of int64, shape (N,)
        Class labels 0-9; ``FASHION_MNIST_CLASSES[label]`` is the class name.
    classes : tuple of str
        :data:`FASHION_MNIST_CLASSES`.
    source : Path
        The folder the four files were read from.
    """

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    classes: tuple = FASHION_MNIST_CLASSES
    source: Path | None = None

    def frame(self, split: str = "train", scale: float = 255.0) -> pd.DataFrame:
        """One split as a DataFrame: pixel columns ``p0 .. p783`` and ``label``.

        Parameters
        ----------
        split : {"train", "test"}, default "train"
        scale : float, default 255
            Pixels are divided by it (the default gives intensities in [0, 1]).

        Returns
        -------
        DataFrame
            Pixel ``(row, col)`` is column ``p{28*row + col}``;
            ``frame.attrs["image_shape"]`` is ``(28, 28)``.

        Examples
        --------
        >>> tiny = FashionMNIST(np.zeros((2, 2, 2), np.uint8), np.array([0, 9]),
        ...                     np.zeros((1, 2, 2), np.uint8), np.array([3]))
        >>> tiny.frame("test").columns.tolist()
        ['p0', 'p1', 'p2', 'p3', 'label']
        """
        if split not in ("train", "test"):
            raise OptionError(f"split={split!r}; use 'train' or 'test'")
        if not isinstance(scale, (int, float)) or not scale > 0:
            raise OptionError(f"scale={scale!r}; use a positive number such as 255.0")
        images = self.train_images if split == "train" else self.test_images
        labels = self.train_labels if split == "train" else self.test_labels
        flat = images.reshape(len(images), -1).astype(np.float64) / scale
        frame = pd.DataFrame(flat, columns=[f"p{k}" for k in range(flat.shape[1])])
        frame["label"] = labels.astype("int64")
        frame.attrs["image_shape"] = tuple(images.shape[1:])
        return frame


def read_idx(path: str | Path) -> np.ndarray:
    """Read one IDX file (the MNIST format; gzipped when the name ends in ``.gz``).

    The header is two zero bytes, a type code (``0x08`` unsigned byte, ...,
    ``0x0E`` float64), the number of dimensions, then each dimension as a
    big-endian 32-bit integer; the data follow in C order.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    ndarray
        With the file's shape, in native byte order.

    Raises
    ------
    DataError
        The file is not a well-formed IDX file (the message says what is wrong).

    Examples
    --------
    >>> import tempfile, os
    >>> name = os.path.join(tempfile.mkdtemp(), "labels-idx1-ubyte")
    >>> _ = open(name, "wb").write(bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 0, 9]))
    >>> read_idx(name).tolist()
    [7, 0, 9]
    """
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            raw = handle.read()
    except (OSError, EOFError) as err:  # gzip.BadGzipFile is an OSError
        raise DataError(f"cannot read the IDX file {path} ({err})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise DataError(f"{path} is not an IDX file: its first 4 bytes are {raw[:4].hex()!r}, "
                        "expected 00 00, a type code (08 for unsigned bytes) and the rank")
    rank, start = raw[3], 4 + 4 * raw[3]
    if len(raw) < start:
        raise DataError(f"{path}: the header announces {rank} dimensions "
                        "but the file ends inside it")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", count=rank, offset=4))
    dtype = np.dtype(_IDX_TYPES[raw[2]])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) - start != expected:
        raise DataError(f"{path}: the header announces shape {shape} ({expected} bytes of data) "
                        f"but the file holds {len(raw) - start} bytes after the header")
    return np.frombuffer(raw, dtype, offset=start).reshape(shape).astype(dtype.newbyteorder("="))


def _debian_fashion_folder() -> Path:
    """The folder where the Debian package put the IDX files, asked of ``dpkg -L``."""
    if shutil.which("dpkg") is None:
        raise MissingDependencyError(
            "fashion_mnist() without a path looks for the Debian package "
            f"'{FASHION_MNIST_PACKAGE}', "
            "but this system has no dpkg; pass path= the folder holding the four IDX files "
            "(train-images-idx3-ubyte.gz, ...)")
    listing = subprocess.run(["dpkg", "-L", FASHION_MNIST_PACKAGE], capture_output=True, text=True,
                             check=False)
    if listing.returncode != 0:
        raise MissingDependencyError(
            f"fashion_mnist() reads the Debian package '{FASHION_MNIST_PACKAGE}', which is not "
            f"installed; {_APT_HINT} (or pass path= a folder holding the four IDX files)")
    target = _FASHION_FILES["train_images"]
    for line in listing.stdout.splitlines():
        if Path(line).name in (target, target + ".gz"):
            return Path(line).parent
    raise MissingDependencyError(
        f"the installed package '{FASHION_MNIST_PACKAGE}' lists no file {target}(.gz); "
        f"reinstall it with: apt-get install --reinstall {FASHION_MNIST_PACKAGE}")


def _idx_file(folder: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz"):
        if (folder / name).is_file():
            return folder / name
    raise DataError(f"{folder} has neither {stem} nor {stem}.gz; fashion_mnist() needs the four "
                    f"files {', '.join(_FASHION_FILES.values())} (gzipped or not), which the "
                    f"Debian package '{FASHION_MNIST_PACKAGE}' provides ({_APT_HINT})")


def fashion_mnist(path: str | Path | None = None) -> FashionMNIST:
    """Zalando's Fashion-MNIST: 60 000 training and 10 000 test images of clothing, 28x28 pixels.

    The ten classes (:data:`FASHION_MNIST_CLASSES`, by label 0-9) are
    T-shirt/top, Trouser, Pullover, Dress, Coat, Sandal, Shirt, Sneaker, Bag
    and Ankle boot; each has 6 000 training and 1 000 test images. Nothing is
    downloaded: the four IDX files are read from *path*.

    Parameters
    ----------
    path : str or Path, optional
        Folder holding ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
        ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte``, each
        possibly gzipped (``.gz``). By default the folder of the Debian package
        ``dataset-fashion-mnist`` (``apt-get install dataset-fashion-mnist``),
        found with ``dpkg -L``.

    Returns
    -------
    FashionMNIST
        Images as uint8 arrays of shape (N, 28, 28), labels as int64;
        ``.frame("train")`` gives a DataFrame of pixels in [0, 1] and labels.

    Raises
    ------
    MissingDependencyError
        No *path* and the Debian package is not installed (or there is no dpkg).
    DataError
        A file is missing or malformed, or images and labels disagree in number.

    Examples
    --------
    >>> data = fashion_mnist()  # doctest: +SKIP
    >>> data.train_images.shape, data.classes[data.train_labels[0]]  # doctest: +SKIP
    ((60000, 28, 28), 'Ankle boot')
    """
    folder = _debian_fashion_folder() if path is None else Path(path)
    if not folder.is_dir():
        raise DataError(f"path={str(path)!r} is not a folder; pass the folder holding the four "
                        "Fashion-MNIST IDX files, or path=None for the Debian package "
                        f"({_APT_HINT})")
    arrays = {key: read_idx(_idx_file(folder, stem)) for key, stem in _FASHION_FILES.items()}
    for split in ("train", "test"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise DataError(f"{folder}: {split} images have shape {images.shape} and labels "
                            f"{labels.shape}; "
                            "expected (N, height, width) images and N labels")
        if labels.size and (labels.min() < 0 or labels.max() >= len(FASHION_MNIST_CLASSES)):
            raise DataError(f"{folder}: {split} labels range over {labels.min()}..{labels.max()}, "
                            f"not the classes 0..{len(FASHION_MNIST_CLASSES) - 1}")
        arrays[f"{split}_images"] = images.astype(np.uint8, copy=False)
        arrays[f"{split}_labels"] = labels.astype(np.int64)
    return FashionMNIST(**arrays, source=folder)
