"""Averages of pretrained word vectors (GloVe, word2vec, fastText ``.vec``) loaded with gensim."""

from __future__ import annotations

import copy
import os
from pathlib import Path

from ..exceptions import OptionError
from ._checks import check_choice, check_fitted, check_int
from .text import TextLearner
from .word_vectors import mean_word_vectors

__all__ = ["PretrainedVectors", "load_word_vectors"]

FORMATS = ("auto", "word2vec", "glove", "binary", "kv")


def load_word_vectors(path, format: str = "auto", limit: int | None = None, encoding: str = "utf-8"):
    """Load word vectors into gensim ``KeyedVectors``.

    Parameters
    ----------
    path : str or path-like
    format : {"auto", "word2vec", "glove", "binary", "kv"}, default "auto"
        ``"word2vec"``: text with a ``"<count> <dim>"`` header line (also
        fastText ``.vec`` files); ``"glove"``: text without a header;
        ``"binary"``: word2vec's binary format; ``"kv"``: a file written by
        ``KeyedVectors.save``. ``"auto"`` picks ``"binary"`` for ``.bin``,
        ``"kv"`` for ``.kv`` / ``.model``, and otherwise looks at the first line:
        two integers mean ``"word2vec"``, anything else ``"glove"``.
    limit : int, optional
        Read only the first ``limit`` vectors (text and binary formats).
    encoding : str, default "utf-8"
        Encoding of the words in text and binary files (for example ``"latin-1"``).

    Returns
    -------
    gensim.models.KeyedVectors

    Examples
    --------
    >>> from importlib import resources
    >>> glove = resources.files("gensim").joinpath("test", "test_data", "test_glove.txt")
    >>> vectors = load_word_vectors(glove)
    >>> len(vectors), vectors.vector_size
    (76, 50)
    """
    from gensim.models import KeyedVectors

    check_choice(format, "format", FORMATS)
    path = Path(os.fspath(path))
    if not path.is_file():
        raise OptionError(f"word-vector file {str(path)!r} does not exist")
    if format == "auto":
        format = _sniff_format(path)
    try:
        if format == "kv":
            return KeyedVectors.load(str(path))
        return KeyedVectors.load_word2vec_format(
            str(path), binary=format == "binary", no_header=format == "glove", limit=limit, encoding=encoding
        )
    except UnicodeDecodeError as err:
        raise OptionError(
            f"the words in {str(path)!r} are not valid {encoding!r} text ({err}); give the file's encoding, "
            "e.g. encoding='latin-1'"
        ) from None
    except Exception as err:  # gensim raises assorted errors on malformed files
        raise OptionError(
            f"could not read {str(path)!r} as {format!r} word vectors ({type(err).__name__}: {err}); "
            f"give format= one of {FORMATS[1:]}"
        ) from None


def _sniff_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".bin":
        return "binary"
    if suffix in (".kv", ".model"):
        return "kv"
    with open(path, "rb") as handle:
        first = handle.readline().split()
    return "word2vec" if len(first) == 2 and all(part.isdigit() for part in first) else "glove"


class PretrainedVectors(TextLearner):
    """Mean of pretrained word vectors over each document's words.

    Nothing is learned from the documents: ``fit`` loads the vectors (once). A
    document with no word in the vectors' vocabulary gets a row of zeros.

    Parameters
    ----------
    source : str, path-like or gensim.models.KeyedVectors
        A word-vector file (see :func:`load_word_vectors` for formats) or loaded vectors.
    format : {"auto", "word2vec", "glove", "binary", "kv"}, default "auto"
    limit : int, optional
        Load only the first ``limit`` vectors of the file (the most frequent words in
        GloVe and word2vec releases); saves memory with large files.
    encoding : str, default "utf-8"
        Encoding of the words in the file.
    tokenizer : callable, optional
        ``str -> list of str``; default :func:`~pearlstats.representations.text.default_tokenizer`
        (lower case, which suits GloVe's lower-cased vocabulary).
    columns : str, optional
        The text column this learner reads inside a ``Representations`` container.

    Notes
    -----
    Pickling a fitted learner stores the vectors, so it transforms without the
    file. Copies (as ``Representations.fit`` makes) share the loaded vectors.

    Examples
    --------
    >>> from importlib import resources
    >>> glove = resources.files("gensim").joinpath("test", "test_data", "test_glove.txt")
    >>> learner = PretrainedVectors(glove).fit(["the cat"])
    >>> learner.transform(["of the", "zzz"]).shape
    (2, 50)
    """

    def __init__(self, source, *, format: str = "auto", limit: int | None = None, encoding: str = "utf-8",
                 tokenizer=None, columns=None):
        super().__init__(tokenizer, columns)
        check_choice(format, "format", FORMATS)
        self.source = source
        self.format = format
        self.limit = None if limit is None else check_int(limit, "limit")
        self.encoding = encoding
        self.vectors_ = None

    def __repr__(self):
        source = self.source if isinstance(self.source, (str, os.PathLike)) else type(self.source).__name__
        return f"PretrainedVectors({str(source)!r})"

    def __deepcopy__(self, memo):
        # The vectors are read-only and may be large: copies share them.
        clone = copy.copy(self)
        memo[id(self)] = clone
        return clone

    def fit(self, documents=None) -> PretrainedVectors:
        """Load the vectors (the documents are only checked)."""
        if documents is not None:
            self._tokens(documents)
        if self.vectors_ is None:
            if hasattr(self.source, "key_to_index") and hasattr(self.source, "vectors"):
                self.vectors_ = self.source
            else:
                self.vectors_ = load_word_vectors(self.source, self.format, self.limit, self.encoding)
        self.output_dim_ = int(self.vectors_.vector_size)
        return self

    def transform(self, documents):
        """Mean vector of each document's known words, shape (n_documents, vector_size)."""
        check_fitted(self, "vectors_")
        return mean_word_vectors(self._tokens(documents), self.vectors_)

    def fit_transform(self, documents):
        return self.fit(documents).transform(documents)
