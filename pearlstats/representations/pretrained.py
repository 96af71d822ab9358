"""Averages of pretrained word vectors (GloVe, word2vec, fastText ``.vec``) loaded with gensim."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._warnings import warn
from ..exceptions import DataError, OptionError, UnknownTokensWarning
from ._checks import check_choice, check_fitted, check_int, transactional
from .text import TextLearner
from .word_vectors import mean_word_vectors

if TYPE_CHECKING:
    import numpy as np
    from gensim.models import KeyedVectors
    from numpy.typing import ArrayLike

    from ._checks import Tokenizer

__all__ = ["PretrainedVectors", "load_word_vectors"]

FORMATS = ("auto", "word2vec", "glove", "binary", "kv")
# fit() warns when more than this share of the documents' tokens has no vector.
UNKNOWN_TOKEN_SHARE = 0.5


def load_word_vectors(
    path: str | os.PathLike, format: str = "auto", limit: int | None = None, encoding: str = "utf-8"
) -> KeyedVectors:
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

    Raises
    ------
    DataError
        A line of a text file has a different number of values than the
        others (a truncated or malformed file); the message names the line.
        gensim itself would broadcast a single value to the whole vector.
    OptionError
        The file does not exist or cannot be read in *format*: with
        ``format="word2vec"``, a first line that is not a ``"<count> <dim>"``
        header (a GloVe file) is named.

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
    if limit is not None:
        check_int(limit, "limit")
    path = Path(os.fspath(path))
    if not path.is_file():
        raise OptionError(f"word-vector file {str(path)!r} does not exist")
    if format == "auto":
        format = _sniff_format(path)
    if format in ("word2vec", "glove"):
        _check_text_widths(path, format, limit)
    try:
        if format == "kv":
            return KeyedVectors.load(str(path))
        return KeyedVectors.load_word2vec_format(
            str(path),
            binary=format == "binary",
            no_header=format == "glove",
            limit=limit,
            encoding=encoding,
        )
    except UnicodeDecodeError as err:
        raise OptionError(
            f"the words in {str(path)!r} are not valid {encoding!r} text ({err}); give the file's "
            "encoding, e.g. encoding='latin-1'"
        ) from None
    except Exception as err:  # gensim raises assorted errors on malformed files
        raise OptionError(
            f"could not read {str(path)!r} as {format!r} word vectors ({type(err).__name__}: "
            f"{err}); give format= one of {FORMATS[1:]}"
        ) from None


def _check_text_widths(path: Path, format: str, limit: int | None) -> None:
    """Every vector line holds a word and the same number of values, and there is one (one
    pass over the bytes)."""
    with open(path, "rb") as handle:
        expected, first, start = None, None, 1
        vectors = 0
        if format == "word2vec":
            line = handle.readline()
            expected, first, start = _word2vec_header(line, path) + 1, "the header", 2
        for number, line in enumerate(handle, start):
            if limit is not None and number - start >= limit:
                break
            line = line.rstrip()
            if not line:
                continue
            vectors += 1
            width = len(line.split(b" "))  # gensim splits on single spaces
            if expected is None:
                expected, first = width, f"line {number}"
            elif width != expected:
                raise DataError(
                    f"line {number} of {str(path)!r} has {width - 1} value(s) after the word, but "
                    f"{first} gives vectors of {expected - 1}; the file is truncated or malformed "
                    "— fix or drop the line"
                )
    if vectors == 0 or expected == 1:
        raise DataError(
            f"{str(path)!r} holds no word vectors (no line with a word and its values after "
            f"{'the header' if format == 'word2vec' else 'the start'}), so every document's "
            "block row would be empty; give a file with vectors"
        )


def _word2vec_header(line: bytes, path: Path) -> int:
    """The vector size of a word2vec ``"<count> <dim>"`` header line; a file whose first line
    is anything else (a GloVe file starts with a vector) is refused by name, not with the
    ``ValueError`` of ``int()`` on a number of the vector."""
    header = line.split()
    if len(header) != 2 or not all(part.isdigit() for part in header):
        shown = line.decode("utf-8", errors="replace").strip()
        shown = repr(shown if len(shown) <= 60 else shown[:60] + "...")
        raise OptionError(
            f"the first line of {str(path)!r}, {shown}, is not a word2vec header "
            "'<count> <dim>' (two integers), which a file in format='word2vec' starts with; "
            "for vectors without a header line (GloVe) use format='glove', or format='auto' "
            "to decide by the first line"
        )
    count, size = int(header[0]), int(header[1])
    if count == 0 or size == 0:
        raise DataError(
            f"the header of {str(path)!r} says {count} word(s) of {size} value(s): the file "
            "holds no word vectors, so every document's block row would be empty; give a file "
            "with vectors"
        )
    return size


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

    Attributes
    ----------
    input_kind : str
        ``"text"``: a ``Representations`` container hands :meth:`fit` and
        :meth:`transform` a list of strings (one text column).

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

    def __init__(
        self,
        source: str | os.PathLike | KeyedVectors | Mapping[str, ArrayLike],
        *,
        format: str = "auto",
        limit: int | None = None,
        encoding: str = "utf-8",
        tokenizer: Tokenizer | None = None,
        columns: str | Sequence[str] | None = None,
    ):
        super().__init__(tokenizer, columns)
        check_choice(format, "format", FORMATS)
        if not (isinstance(source, (str, os.PathLike)) or _is_keyed_vectors(source)):
            raise OptionError(
                f"source={source!r:.60} must be the path of a word-vector file or gensim "
                f"KeyedVectors, got {type(source).__name__}"
            )
        if not isinstance(encoding, str):
            raise OptionError(
                f"encoding={encoding!r} must be the name of a text encoding, e.g. 'utf-8'"
            )
        self.source = source
        self.format = format
        if limit is not None:
            check_int(limit, "limit")
        self.limit = limit
        self.encoding = encoding

    def __repr__(self):
        source = (
            self.source
            if isinstance(self.source, (str, os.PathLike))
            else type(self.source).__name__
        )
        return self._repr(source=str(source))

    def __deepcopy__(self, memo):
        # The vectors are read-only and may be large: copies share them.
        clone = copy.copy(self)
        memo[id(self)] = clone
        return clone

    @transactional
    def fit(self, documents: Any = None, y: Any = None) -> PretrainedVectors:
        """Load the vectors (the documents are only checked).

        Warns (:class:`~pearlstats.exceptions.UnknownTokensWarning`) when more than
        half of the documents' tokens have no vector. If ``fit`` raises, the learner
        keeps its previous state.

        Parameters
        ----------
        documents : list of str, optional
            Documents to check against the vectors' vocabulary (nothing is learned).
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> from importlib import resources
        >>> import pearlstats as pearl
        >>> glove = resources.files("gensim").joinpath("test", "test_data", "test_glove.txt")
        >>> pearl.PretrainedVectors(glove).fit(["the cat"]).output_dim_
        50
        """
        token_lists = None if documents is None else self._tokens(documents)
        if getattr(self, "vectors_", None) is None:
            if _is_keyed_vectors(self.source):
                self.vectors_ = self.source
            else:
                self.vectors_ = load_word_vectors(
                    self.source, self.format, self.limit, self.encoding
                )
        self.output_dim_ = int(self.vectors_.vector_size)
        if token_lists is not None:
            self._warn_unknown(token_lists)
        return self

    def _warn_unknown(self, token_lists) -> None:
        lookup = self.vectors_.key_to_index
        tokens = sum(len(t) for t in token_lists)
        unknown = sum(word not in lookup for t in token_lists for word in t)
        if not tokens or unknown / tokens <= UNKNOWN_TOKEN_SHARE:
            return
        # A vocabulary with capitalised words is cased; the default tokenizer lower-cases.
        cased = any(word[:1].isupper() for word in list(lookup)[:10_000])
        hint = (
            "the vectors are cased but the default tokenizer lower-cases the text: use "
            "tokenizer=pearlstats.representations.cased_tokenizer"
            if cased and self.tokenizer is None
            else "check that the tokenizer matches the vectors' vocabulary (case, language)"
        )
        warn(
            f"{unknown / tokens:.0%} of the {tokens} tokens in the documents have no word vector, "
            f"so their rows are mostly or all zeros; {hint}",
            UnknownTokensWarning,
        )

    def transform(self, documents: Any) -> np.ndarray:
        """Mean vector of each document's known words, shape (n_documents, vector_size).

        Parameters
        ----------
        documents : list of str
            The documents (one string per row).

        Examples
        --------
        >>> from importlib import resources
        >>> import pearlstats as pearl
        >>> glove = resources.files("gensim").joinpath("test", "test_data", "test_glove.txt")
        >>> vectors = pearl.PretrainedVectors(glove).fit()
        >>> vectors.transform(["of the", "zzz"]).shape
        (2, 50)
        """
        check_fitted(self, "vectors_")
        return mean_word_vectors(self._tokens(documents), self.vectors_)

    def fit_transform(self, documents: Any, y: Any = None) -> np.ndarray:
        """``fit(documents)`` then ``transform(documents)``.

        Parameters
        ----------
        documents : list of str
            The documents (one string per row).
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> from importlib import resources
        >>> import pearlstats as pearl
        >>> glove = resources.files("gensim").joinpath("test", "test_data", "test_glove.txt")
        >>> pearl.PretrainedVectors(glove).fit_transform(["of the"]).shape
        (1, 50)
        """
        return self.fit(documents).transform(documents)


def _is_keyed_vectors(source) -> bool:
    return hasattr(source, "key_to_index") and hasattr(source, "vectors")
