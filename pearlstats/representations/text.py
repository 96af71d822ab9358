"""Text learners on a vocabulary (gensim): word counts, TF-IDF and LSI.

Documents are strings from one column. They are split into tokens by
:func:`default_tokenizer` (gensim's ``simple_preprocess``: lower case, tokens
of 2 to 15 letters, punctuation and digits dropped) unless a ``tokenizer``
(a function ``str -> list of str``; module-level if the learner must pickle) is
given. Words not in the fitted vocabulary are ignored when transforming.

Counts and TF-IDF blocks have one column per vocabulary word and are returned
as scipy CSR matrices; no dense documents x vocabulary matrix is ever built.

Examples
--------
>>> docs = ["the cat sat", "the dog sat down", "a dog barked"]
>>> counts = BagOfWords().fit(docs)
>>> counts.vocabulary_
['cat', 'sat', 'the', 'dog', 'down', 'barked']
>>> counts.transform(["the cat and the dog"]).toarray()
array([[1., 0., 2., 1., 0., 0.]])
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..exceptions import BlockError, DataError, MissingValueError, OptionError, format_positions
from ._checks import (
    check_bool,
    check_fitted,
    check_int,
    check_seed,
    flip_signs,
    is_missing,
    transactional,
)
from ._params import LearnerParams
from .pca import NULL_VARIANCE

if TYPE_CHECKING:
    from ._checks import Tokenizer

__all__ = ["default_tokenizer", "cased_tokenizer", "TextLearner", "BagOfWords", "TfIdf", "LSI"]


def default_tokenizer(text: str) -> list[str]:
    """gensim's ``simple_preprocess``: lower-cased tokens of 2-15 letters.

    Examples
    --------
    >>> default_tokenizer("It's a GREAT film, 10/10!")
    ['it', 'great', 'film']
    """
    from gensim.utils import simple_preprocess

    return simple_preprocess(text)


def cased_tokenizer(text: str) -> list[str]:
    """Tokens of 2-15 letters like :func:`default_tokenizer`, but with their case kept.

    For word vectors with a cased vocabulary (word2vec's GoogleNews, fastText),
    where lower-casing would miss every capitalised word.

    Examples
    --------
    >>> cased_tokenizer("It's a GREAT film, 10/10!")
    ['It', 'GREAT', 'film']
    """
    from gensim.utils import tokenize

    return [token for token in tokenize(text, lowercase=False) if 2 <= len(token) <= 15]


class TextLearner(LearnerParams):
    """Shared input handling of the text learners: a list of documents -> token lists."""

    input_kind = "text"

    def __init__(
        self, tokenizer: Tokenizer | None = None, columns: str | Sequence[str] | None = None
    ):
        if tokenizer is not None and not callable(tokenizer):
            raise OptionError(
                f"tokenizer must be a function str -> list of str, got {type(tokenizer).__name__}"
            )
        self.tokenizer = tokenizer
        self.columns = columns

    def _document_column(self, frame: Any) -> Any:
        """The documents of a DataFrame given directly (a Pipeline step): its ``columns=``
        column, or its only column. Iterating the frame would read its column *labels* as
        the documents (two documents from a frame of 200 rows)."""
        name = type(self).__name__
        wanted = self.columns
        if isinstance(wanted, (list, tuple)) and len(wanted) == 1:
            wanted = wanted[0]
        if isinstance(wanted, str) and wanted in frame.columns:
            return frame[wanted]
        if wanted is None and frame.shape[1] == 1:
            return frame.iloc[:, 0]
        raise DataError(
            f"{name} reads one column of documents; it got a DataFrame with columns "
            f"{list(frame.columns)[:10]}{' (columns=' + repr(self.columns) + ')' if wanted else ''}"
            ": pass the column itself (df['text']), or set columns= to the column's name"
        )

    def _documents(self, documents) -> list[str]:
        """The documents as a list of str, or an error naming this learner."""
        name = type(self).__name__
        if hasattr(documents, "columns") and hasattr(documents, "iloc"):  # a DataFrame
            documents = self._document_column(documents)
        if isinstance(documents, str):
            raise DataError(
                f"{name} needs a list of documents, got a single string; wrap it as [text]"
            )
        documents = list(documents)
        if not documents:
            raise DataError(f"{name} got no documents")
        missing = [position for position, text in enumerate(documents) if is_missing(text)]
        if missing:
            raise MissingValueError(
                f"{name} got missing documents (None, NaN or pd.NA) in "
                f"{format_positions(missing)}; "
                "drop those rows or replace them with '' (an empty document)"
            )
        for position, text in enumerate(documents):
            if not isinstance(text, str):
                raise DataError(
                    f"{name} reads strings, but document {position} is a {type(text).__name__}"
                )
        return documents

    def _tokens(self, documents) -> list[list[str]]:
        tokenize = self.tokenizer or default_tokenizer
        token_lists = []
        for position, text in enumerate(self._documents(documents)):
            tokens = tokenize(text)
            # Take a generator's tokens now: checking them would otherwise use them up and
            # leave an empty document. A str or None (no return statement) is not tokens.
            if not isinstance(tokens, str) and isinstance(tokens, Iterable):
                tokens = list(tokens)
            if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
                raise OptionError(
                    "the tokenizer must return a list of str; for "
                    f"document {position} it returned {tokens!r:.80}"
                )
            token_lists.append(tokens)
        return token_lists


class BagOfWords(TextLearner):
    """Word counts per document, one column per vocabulary word (a sparse block).

    Parameters
    ----------
    min_df : int, default 1
        Keep words that occur in at least this many training documents.
    max_df : float, default 1.0
        Drop words that occur in more than this fraction of training documents.
    max_features : int, optional
        Keep only this many words, those in the most documents.
    tokenizer : callable, optional
        ``str -> list of str``; default :func:`default_tokenizer`.
    columns : str, optional
        The text column this learner reads inside a ``Representations`` container.

    Attributes
    ----------
    dictionary_ : gensim.corpora.Dictionary
        The vocabulary; column ``j`` of the block counts word ``dictionary_[j]``.
    vocabulary_ : list of str
        Words in column order.
    input_kind : str
        ``"text"``: a ``Representations`` container hands :meth:`fit` and
        :meth:`transform` a list of strings (one text column).

    Examples
    --------
    >>> BagOfWords().fit(["good good film", "bad film"]).transform(["good film"]).toarray()
    array([[1., 1., 0.]])
    """

    def __init__(self, *, min_df: int = 1, max_df: float = 1.0, max_features: int | None = None,
                 tokenizer: Tokenizer | None = None, columns: str | Sequence[str] | None = None):
        super().__init__(tokenizer, columns)
        check_int(min_df, "min_df")
        self.min_df = min_df
        if isinstance(max_df, bool) or not isinstance(max_df, numbers.Real) or not 0 < max_df <= 1:
            raise OptionError(
                f"max_df={max_df!r} must be a number in (0, 1], the largest share of documents"
            )
        self.max_df = max_df
        if max_features is not None:
            check_int(max_features, "max_features")
        self.max_features = max_features

    def __repr__(self):
        return self._repr(min_df=self.min_df, max_df=self.max_df,
                          max_features=self.max_features)

    @property
    def vocabulary_(self) -> list[str]:
        """The vocabulary's words in column order (after :meth:`fit`).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> docs = ["good film", "bad film", "good plot", "a bad plot"]
        >>> pearl.BagOfWords(min_df=2).fit(docs).vocabulary_
        ['film', 'good', 'bad', 'plot']
        """
        check_fitted(self, "dictionary_")
        return [self.dictionary_[i] for i in range(len(self.dictionary_))]

    @transactional
    def fit(self, documents: Any, y: Any = None) -> BagOfWords:
        """Learn the vocabulary of ``documents`` (a list of strings).

        If ``fit`` raises, the learner keeps its previous fit (or stays unfitted).

        Parameters
        ----------
        documents : list of str
            The documents (one string per row).
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> docs = ["good film", "bad film", "good plot", "a bad plot"]
        >>> pearl.BagOfWords().fit(docs).vocabulary_
        ['film', 'good', 'bad', 'plot']
        """
        self._learn_vocabulary(self._tokens(documents))
        return self

    def _learn_vocabulary(self, token_lists):
        from gensim.corpora import Dictionary

        dictionary = Dictionary(token_lists)
        if self.min_df > 1 or self.max_df < 1 or self.max_features is not None:
            dictionary.filter_extremes(
                no_below=self.min_df, no_above=self.max_df, keep_n=self.max_features
            )
        if len(dictionary) == 0:
            raise BlockError(
                f"{type(self).__name__} found no vocabulary words in the {len(token_lists)} "
                f"training documents (min_df={self.min_df}, max_df={self.max_df}); check the text "
                "column and the tokenizer"
            )
        self.dictionary_ = dictionary
        self.output_dim_ = len(dictionary)

    def transform(self, documents: Any) -> sp.csr_matrix:
        """Counts of the vocabulary words in each document, a CSR matrix (documents x words).

        Parameters
        ----------
        documents : list of str
            The documents (one string per row).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> docs = ["good film", "bad film", "good plot", "a bad plot"]
        >>> bow = pearl.BagOfWords().fit(docs)
        >>> bow.transform(["good good film"]).toarray()
        array([[1., 2., 0., 0.]])
        """
        check_fitted(self, "dictionary_")
        return _sparse_rows(
            [self.dictionary_.doc2bow(t) for t in self._tokens(documents)], self.output_dim_
        )

    def fit_transform(self, documents: Any, y: Any = None) -> sp.csr_matrix:
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
        >>> import pearlstats as pearl
        >>> docs = ["good film", "bad film", "good plot", "a bad plot"]
        >>> pearl.BagOfWords(min_df=2).fit_transform(docs).toarray()
        array([[1., 1., 0., 0.],
               [1., 0., 1., 0.],
               [0., 1., 0., 1.],
               [0., 0., 1., 1.]])
        """
        return self.fit(documents).transform(documents)


class TfIdf(BagOfWords):
    """TF-IDF weights per document (gensim ``TfidfModel``), one column per word (a sparse block).

    With the defaults the weight of word ``t`` in document ``d`` is
    ``count(t, d) * log2(N / df(t))`` (``N`` training documents, ``df(t)`` of them
    containing ``t``), and each document's row is scaled to unit Euclidean
    length. Words in every training document therefore get weight 0.

    Parameters
    ----------
    smartirs : str, optional
        gensim's SMART code for other weightings, e.g. ``"ltc"`` (log term
        frequency, idf, cosine normalisation); see ``gensim.models.TfidfModel``.
    normalize : bool, default True
        Scale rows to unit length (ignored when ``smartirs`` is given).
    **vocabulary
        ``min_df``, ``max_df``, ``max_features``, ``tokenizer``, ``columns``, as in
        :class:`BagOfWords`.

    Attributes
    ----------
    input_kind : str
        ``"text"``: a ``Representations`` container hands :meth:`fit` and
        :meth:`transform` a list of strings (one text column).

    Examples
    --------
    >>> tfidf = TfIdf().fit(["good film", "bad film", "good plot"])
    >>> tfidf.vocabulary_, tfidf.transform(["good film"]).toarray().round(3)
    (['film', 'good', 'bad', 'plot'], array([[0.707, 0.707, 0.   , 0.   ]]))
    """

    def __init__(self, *, smartirs: str | None = None, normalize: bool = True, **vocabulary: Any):
        super().__init__(**vocabulary)
        if smartirs is not None:
            from gensim.models.tfidfmodel import resolve_weights

            try:
                resolve_weights(smartirs)
            except (ValueError, TypeError) as err:
                raise OptionError(
                    f"smartirs={smartirs!r} is not a SMART code gensim accepts ({err})"
                ) from None
        self.smartirs = smartirs
        check_bool(normalize, "normalize")
        self.normalize = normalize

    @transactional
    def fit(self, documents: Any, y: Any = None) -> TfIdf:
        """Learn the vocabulary and the inverse document frequencies of ``documents``.

        If ``fit`` raises, the learner keeps its previous fit (or stays unfitted).

        Parameters
        ----------
        documents : list of str
            The documents (one string per row).
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> docs = ["good film", "bad film", "good plot", "a bad plot"]
        >>> pearl.TfIdf().fit(docs).vocabulary_
        ['film', 'good', 'bad', 'plot']
        """
        from gensim.models import TfidfModel

        self._learn_vocabulary(self._tokens(documents))
        self.model_ = TfidfModel(dictionary=self.dictionary_, smartirs=self.smartirs,
                                 normalize=self.normalize)
        return self

    def transform(self, documents: Any) -> sp.csr_matrix:
        """TF-IDF rows of the documents, a CSR matrix (documents x words).

        A document without vocabulary words gets an empty (all-zero) row.

        Parameters
        ----------
        documents : list of str
            The documents (one string per row).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> docs = ["good film", "bad film", "good plot", "a bad plot"]
        >>> tfidf = pearl.TfIdf().fit(docs)
        >>> tfidf.transform(["good film", "zzz"]).toarray().round(3)
        array([[0.707, 0.707, 0.   , 0.   ],
               [0.   , 0.   , 0.   , 0.   ]])
        """
        check_fitted(self, "dictionary_")
        bows = [self.dictionary_.doc2bow(t) for t in self._tokens(documents)]
        # gensim's pivoted normalisations ("..p" SMART codes) fail on an empty vector.
        return _sparse_rows([self.model_[bow] if bow else [] for bow in bows], self.output_dim_)


class LSI(TextLearner):
    """Latent semantic indexing: TF-IDF rows projected on their top singular directions.

    The TF-IDF matrix (as in :class:`TfIdf`) of the training documents is
    decomposed by a truncated sparse SVD (ARPACK through
    ``scipy.sparse.linalg.svds``, solved to machine precision; its start vector
    is seeded). A document's block is its TF-IDF row times the top right
    singular vectors, not centred, as in LSI and gensim's ``LsiModel``. The
    largest-magnitude word loading of each direction is positive.

    gensim's ``LsiModel`` uses a randomized SVD instead; on short documents, whose
    singular values are close together, it spans a visibly different subspace
    (smallest principal-angle cosine 0.91 for 10 components on gensim's 200
    Pang & Lee sentences with its default settings), hence the exact solver here.

    Parameters
    ----------
    n_components : int, default 100
        Number of latent dimensions (the block's width); less than both the
        number of training documents and the vocabulary size, and at most the
        rank of their TF-IDF matrix (duplicated documents lower it).
    seed : int, optional
        Seed of the solver's start vector (the result does not depend on it beyond rounding).
    **vocabulary
        ``min_df``, ``max_df``, ``max_features``, ``smartirs``, ``normalize``,
        ``tokenizer``, ``columns``, as in :class:`TfIdf`.

    Attributes
    ----------
    components_ : ndarray of shape (n_words, n_components)
        Unit-length singular directions in word space.
    singular_values_ : ndarray of shape (n_components,)
        Descending.
    tfidf_ : TfIdf
        The fitted TF-IDF learner.
    input_kind : str
        ``"text"``: a ``Representations`` container hands :meth:`fit` and
        :meth:`transform` a list of strings (one text column).

    Examples
    --------
    >>> docs = ["good film", "great film", "bad plot", "awful plot", "good great film"]
    >>> LSI(n_components=2, seed=0).fit(docs).transform(docs).shape
    (5, 2)
    """

    def __init__(self, n_components: int = 100, *, seed: int | None = None, **vocabulary: Any):
        tokenizer, columns = vocabulary.pop("tokenizer", None), vocabulary.pop("columns", None)
        super().__init__(tokenizer, columns)
        check_int(n_components, "n_components")
        self.n_components = n_components
        check_seed(seed)
        self.seed = seed
        self.vocabulary = vocabulary
        TfIdf(**vocabulary)  # reject bad vocabulary options now

    def _extra_params(self) -> dict[str, Any]:
        return dict(self.vocabulary)  # TfIdf's options, given as **vocabulary

    @classmethod
    def _option_names(cls) -> list[str]:
        return sorted(TfIdf().get_params())  # what **vocabulary takes

    def __repr__(self):
        return self._repr(n_components=self.n_components)

    @transactional
    def fit(self, documents: Any, y: Any = None) -> LSI:
        """Learn TF-IDF weights and the top singular directions of the TF-IDF matrix.

        If ``fit`` raises, the learner keeps its previous fit (or stays unfitted).

        Parameters
        ----------
        documents : list of str
            The documents (one string per row).
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> docs = ["good film", "bad film", "good plot", "a bad plot"]
        >>> pearl.LSI(n_components=2, seed=0).fit(docs).singular_values_.round(3)
        array([1.414, 1.   ])
        """
        from scipy.sparse.linalg import svds

        # checked here, so that a wrong input is named LSI, not the TfIdf inside it (and
        # LSI's columns= picks the DataFrame column)
        documents = self._documents(documents)
        tfidf = TfIdf(tokenizer=self.tokenizer, **self.vocabulary).fit(documents)
        X = tfidf.transform(documents)
        k = self.n_components
        if k >= min(X.shape):
            fix = (f"use n_components <= {min(X.shape) - 1}" if min(X.shape) > 1
                   else "give at least 2 documents with 2 distinct vocabulary words")
            raise BlockError(
                f"LSI(n_components={k}) needs more documents and vocabulary words than components; "
                f"got {X.shape[0]} documents and {X.shape[1]} words — {fix}"
            )
        if not np.any(X.data):
            # every word is in every training document (idf 0): ARPACK would fail on a zero
            # start vector, and there is no direction to learn
            raise BlockError(
                f"LSI(n_components={k}) got a TF-IDF matrix of zeros: each of the {X.shape[1]} "
                f"vocabulary words occurs in all {X.shape[0]} training documents, so its inverse "
                "document frequency is 0; give documents that differ in their words"
            )
        _, singular, right = svds(X, k=k, random_state=self.seed)
        order = np.argsort(singular)[::-1]
        singular, right = singular[order], right[order]
        # Beyond the TF-IDF matrix's rank (duplicated documents, words that only occur
        # together) a direction is an arbitrary vector of the null space chosen by the solver's
        # start vector: zero on the training rows, but seed-dependent on new ones. The cut-off
        # is PCA's (squared singular-value ratio 1e-10).
        rank = int(np.sum((singular / singular[0]) ** 2 > NULL_VARIANCE))
        if rank < k:
            raise BlockError(
                f"LSI(n_components={k}) found only {rank} non-zero singular value(s) of the "
                f"TF-IDF matrix of the {X.shape[0]} training documents (its rank is {rank}: "
                "duplicated documents or words that always occur together add no direction); "
                f"use n_components <= {rank}"
            )
        self.tfidf_ = tfidf
        self.components_ = flip_signs(right.T)
        self.singular_values_ = singular
        self.output_dim_ = k
        return self

    def transform(self, documents: Any) -> np.ndarray:
        """Documents' TF-IDF rows on the latent directions, shape (n_docs, n_components).

        Parameters
        ----------
        documents : list of str
            The documents (one string per row).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> docs = ["good film", "bad film", "good plot", "a bad plot"]
        >>> lsi = pearl.LSI(n_components=2, seed=0).fit(docs)
        >>> lsi.transform(["good film"]).shape
        (1, 2)
        """
        check_fitted(self, "components_")
        documents = self._documents(documents)  # named LSI, as in fit
        return np.asarray(self.tfidf_.transform(documents) @ self.components_)

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
        >>> import pearlstats as pearl
        >>> docs = ["good film", "bad film", "good plot", "a bad plot"]
        >>> pearl.LSI(n_components=2, seed=0).fit_transform(docs).shape
        (4, 2)
        """
        return self.fit(documents).transform(documents)


def _sparse_rows(rows, n_columns: int) -> sp.csr_matrix:
    """CSR matrix from gensim sparse vectors (lists of ``(column, value)``)."""
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.fromiter((i for r in rows for i, _ in r), dtype=np.int32, count=indptr[-1])
    data = np.fromiter((v for r in rows for _, v in r), dtype=np.float64, count=indptr[-1])
    matrix = sp.csr_matrix((data, indices, indptr), shape=(len(rows), n_columns))
    matrix.sort_indices()
    return matrix
