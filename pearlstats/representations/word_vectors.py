"""Dense text learners trained on the unlabeled documents (gensim): Word2Vec and Doc2Vec.

Both are stochastic. With a ``seed`` they train on one worker thread (gensim
is deterministic only then) and give identical blocks on every run, in any
process. Without one they draw fresh entropy and may use several workers.

Examples
--------
>>> docs = ["the film was good", "the film was bad", "a good plot"] * 5
>>> Word2Vec(vector_size=8, min_count=1, seed=0).fit(docs).transform(["good film", "zzz"]).shape
(2, 8)
"""

from __future__ import annotations

import hashlib
import inspect
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np
import scipy.sparse as sp

from ..exceptions import BlockError, OptionError
from ._checks import check_fitted, check_int, check_positive, check_seed, transactional
from .text import TextLearner

if TYPE_CHECKING:
    from gensim.models import Doc2Vec as GensimDoc2Vec
    from gensim.models import KeyedVectors

    from ._checks import Tokenizer

__all__ = ["Word2Vec", "Doc2Vec", "mean_word_vectors"]


def mean_word_vectors(token_lists: Sequence[Sequence[str]], vectors: KeyedVectors) -> np.ndarray:
    """Average of the known words' vectors per document (repeated words count repeatedly).

    A document without any word in ``vectors`` gets a row of zeros.

    Parameters
    ----------
    token_lists : list of list of str
    vectors : gensim.models.KeyedVectors

    Returns
    -------
    ndarray of shape (n_documents, vector_size), float64

    Examples
    --------
    >>> import numpy as np
    >>> from gensim.models import KeyedVectors
    >>> kv = KeyedVectors(2)
    >>> kv.add_vectors(["a", "b"], np.array([[1.0, 0.0], [0.0, 3.0]]))
    >>> mean_word_vectors([["a", "b", "b"], ["c"]], kv)
    array([[0.33333333, 2.        ],
           [0.        , 0.        ]])
    """
    lookup = vectors.key_to_index
    known = [[lookup[w] for w in tokens if w in lookup] for tokens in token_lists]
    counts = np.fromiter((len(k) for k in known), dtype=np.int64, count=len(known))
    flat = np.fromiter((i for k in known for i in k), dtype=np.int64, count=counts.sum())
    # Only the rows of words that occur are converted to float64, not the whole vocabulary.
    used, columns = np.unique(flat, return_inverse=True)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    occurrences = sp.csr_matrix(
        (np.ones(len(flat)), columns, indptr), shape=(len(known), len(used))
    )
    sums = occurrences @ np.asarray(vectors.vectors[used], dtype=np.float64)
    return sums / np.maximum(counts, 1)[:, None]


class _GensimLearner(TextLearner):
    def __init__(self, vector_size, seed, workers, tokenizer, columns, options):
        super().__init__(tokenizer, columns)
        check_int(vector_size, "vector_size")
        self.vector_size = vector_size
        check_seed(seed)
        self.seed = seed
        if workers is not None:
            check_int(workers, "workers")
        self.workers = workers
        self._check_gensim_options(options)
        self.options = options
        # the named gensim options are parameters too (scikit-learn's get_params)
        for name in self._param_names():
            if name in options:
                setattr(self, name, options[name])

    @classmethod
    def _param_names(cls) -> list[str]:
        # Only the public class's own arguments: its **options go to gensim, not to a base class.
        parameters = inspect.signature(cls.__init__).parameters.values()
        return sorted(
            parameter.name for parameter in parameters
            if parameter.name != "self" and parameter.kind not in (
                parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL
            )
        )

    def _extra_params(self) -> dict[str, Any]:
        named = set(self._param_names())
        return {name: value for name, value in self.options.items() if name not in named}

    # The corpus, the seed, the workers and the vector size are set by the learner itself.
    _MANAGED = ("sentences", "documents", "corpus_file", "corpus_iterable", "seed", "workers",
                "vector_size")

    @classmethod
    def _gensim_models(cls) -> tuple:
        """The gensim models whose arguments the options are (Doc2Vec takes Word2Vec's too)."""
        from gensim.models import Doc2Vec as GensimDoc2Vec
        from gensim.models import Word2Vec as GensimWord2Vec

        word2vec = cls.__name__ == "Word2Vec"
        return (GensimWord2Vec,) if word2vec else (GensimDoc2Vec, GensimWord2Vec)

    @classmethod
    def _option_names(cls) -> list[str]:
        """The gensim arguments the learner passes on (all but those it sets itself)."""
        accepted = {
            name
            for model in cls._gensim_models()
            for name, parameter in inspect.signature(model.__init__).parameters.items()
            if parameter.kind is parameter.POSITIONAL_OR_KEYWORD and name != "self"
        }
        return sorted(accepted - set(cls._MANAGED))

    def _check_gensim_options(self, options: dict) -> None:
        """Refuse options the gensim model does not take now, rather than when it is fitted."""
        managed = sorted(set(options) & set(self._MANAGED))
        if managed:
            raise OptionError(
                f"{type(self).__name__} sets {managed} itself; give the documents to fit() and "
                "seed / workers / vector_size as the learner's own arguments"
            )
        accepted = self._option_names()
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise OptionError(
                f"{type(self).__name__} got option(s) {unknown} that gensim's "
                f"{self._gensim_models()[0].__name__} does not take; the options are {accepted}"
            )
        self._check_training_options(options)

    def _check_training_options(self, options: dict) -> None:
        """Refuse values of gensim's training options that gensim takes without a word but
        that train nothing or something else (``negative=-1`` trained no vectors: the block
        was gensim's random start)."""
        for name in ("negative", "sample", "min_alpha"):
            if name in options and (isinstance(options[name], bool)
                                    or not isinstance(options[name], numbers.Real)
                                    or not 0 <= options[name] < np.inf):
                raise OptionError(f"{name}={options[name]!r} must be a finite number >= 0")
        if "negative" in options:
            check_int(options["negative"], "negative", minimum=0)
        for name in ("hs", "sg", "dm", "dbow_words", "dm_mean", "dm_concat", "cbow_mean"):
            if name in options and options[name] not in (0, 1):
                raise OptionError(f"{name}={options[name]!r} must be 0 or 1")
        if "alpha" in options:
            check_positive(options["alpha"], "alpha")
        if options.get("hs", 0) == 0 and options.get("negative", 5) == 0:
            raise OptionError(
                f"{type(self).__name__} with hs=0 and negative=0 has no training objective "
                "(gensim would leave the vectors at their random start); use negative sampling "
                "(negative=5, the default) or hierarchical softmax (hs=1)"
            )

    @staticmethod
    def _shared_options(window, min_count, epochs) -> dict:
        """The validated gensim options Word2Vec and Doc2Vec have in common."""
        for value, name in ((window, "window"), (min_count, "min_count"), (epochs, "epochs")):
            check_int(value, name)
        return {"window": window, "min_count": min_count, "epochs": epochs}

    def _train(self, model, corpus) -> None:
        """Build ``model``'s vocabulary from ``corpus`` and train it; an empty one is an error."""
        model.build_vocab(corpus)
        if len(model.wv) == 0:
            raise BlockError(
                f"{type(self).__name__} found no word occurring "
                f"min_count={self.options['min_count']} times in "
                f"the {len(corpus)} training documents; lower min_count or give more text"
            )
        model.train(corpus, total_examples=len(corpus), epochs=model.epochs)

    def _training_settings(self) -> dict:
        seed = (
            self.seed
            if self.seed is not None
            else int(np.random.SeedSequence().generate_state(1)[0])
        )
        workers = self.workers or (1 if self.seed is not None else 3)
        return {"seed": seed, "workers": workers, "vector_size": self.vector_size, **self.options}

    @transactional
    def fit(self, documents: Any, y: Any = None) -> Self:
        """Train the gensim model (word vectors, or Doc2Vec) on the tokenised ``documents``.

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
        >>> docs = ["good film", "bad film", "good plot", "bad plot"] * 10
        >>> w2v = pearl.Word2Vec(vector_size=4, min_count=1, seed=1).fit(docs)
        >>> w2v.output_dim_
        4
        """
        token_lists = self._tokens(documents)
        self._fit_model(token_lists, self._training_settings())
        self.output_dim_ = self.vector_size
        return self

    def _fit_model(self, token_lists: list[list[str]], settings: dict) -> None:
        """Train the gensim model with *settings* and keep what ``transform`` needs."""
        raise NotImplementedError

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
        >>> docs = ["good film", "bad film", "good plot", "bad plot"] * 10
        >>> pearl.Doc2Vec(vector_size=4, min_count=1, seed=1).fit_transform(docs).shape
        (40, 4)
        """
        return self.fit(documents).transform(documents)


class Word2Vec(_GensimLearner):
    """Mean of Word2Vec word vectors trained on the documents.

    Parameters
    ----------
    vector_size : int, default 100
        Width of the block.
    window : int, default 5
        Context window.
    min_count : int, default 5
        Words seen fewer times in training are not learned (gensim's default).
    sg : {0, 1}, default 0
        1 for skip-gram, 0 for CBOW.
    epochs : int, default 5
        Training passes (gensim's default).
    seed : int, optional
        Seed of the initial vectors and sampling; with a seed training uses one
        worker thread, so the block is reproducible.
    workers : int, optional
        Worker threads; default 1 with a seed, else 3. More than one is not reproducible.
    tokenizer : callable, optional
        ``str -> list of str``; default :func:`~pearlstats.representations.text.default_tokenizer`.
    columns : str, optional
        The text column this learner reads inside a ``Representations`` container.
    **options
        Other ``gensim.models.Word2Vec`` arguments (``negative``, ``sample``, ``alpha``, ...).

    Notes
    -----
    A document's block is the mean of the vectors of its words that are in
    the trained vocabulary; a document with no such word gets a row of
    zeros (it carries no information, and zeros keep the block finite).

    Attributes
    ----------
    vectors_ : gensim.models.KeyedVectors
        The trained word vectors.
    input_kind : str
        ``"text"``: a ``Representations`` container hands :meth:`fit` and
        :meth:`transform` a list of strings (one text column).

    Examples
    --------
    >>> docs = ["good film", "bad film", "good plot", "bad plot"] * 10
    >>> w2v = Word2Vec(vector_size=4, min_count=1, seed=1).fit(docs)
    >>> blocks = w2v.transform(["good", "unknown words"])
    >>> bool((blocks[1] == 0).all())
    True
    """

    def __init__(
        self,
        vector_size: int = 100,
        *,
        window: int = 5,
        min_count: int = 5,
        sg: int = 0,
        epochs: int = 5,
        seed: int | None = None,
        workers: int | None = None,
        tokenizer: Tokenizer | None = None,
        columns: str | Sequence[str] | None = None,
        **options: Any,
    ):
        options = {**self._shared_options(window, min_count, epochs), "sg": sg, **options}
        super().__init__(vector_size, seed, workers, tokenizer, columns, options)

    def __repr__(self):
        return self._repr(vector_size=self.vector_size, seed=self.seed)

    def _fit_model(self, token_lists: list[list[str]], settings: dict) -> None:
        from gensim.models import Word2Vec as GensimWord2Vec

        model = GensimWord2Vec(**settings)
        self._train(model, token_lists)
        self.vectors_ = model.wv

    def transform(self, documents: Any) -> np.ndarray:
        """Mean word vector of each document, shape (n_documents, vector_size).

        Parameters
        ----------
        documents : list of str
            The documents (one string per row).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> docs = ["good film", "bad film", "good plot", "bad plot"] * 10
        >>> w2v = pearl.Word2Vec(vector_size=4, min_count=1, seed=1).fit(docs)
        >>> blocks = w2v.transform(["good film", "unknown words"])
        >>> blocks.shape, bool((blocks[1] == 0).all())  # no known word: a row of zeros
        ((2, 4), True)
        """
        check_fitted(self, "vectors_")
        return mean_word_vectors(self._tokens(documents), self.vectors_)


class Doc2Vec(_GensimLearner):
    """Doc2Vec (paragraph vectors) inferred for every document, training and new alike.

    A gensim ``Doc2Vec`` model is trained on the documents; the block of any
    document is then its *inferred* vector, so training and new rows go
    through the same mapping. Inference is made deterministic and independent
    of the other documents in the batch: each document's starting vector and
    negative-sampling stream are seeded from ``seed`` and a hash (BLAKE2) of
    its tokens, in place of gensim's process-dependent ``hash()``.

    Parameters
    ----------
    vector_size : int, default 100
        Width of the block.
    dm : {1, 0}, default 1
        1 for distributed memory (PV-DM), 0 for distributed bag of words (PV-DBOW).
    window : int, default 5
    min_count : int, default 5
    epochs : int, default 10
        Training passes, and inference passes per document (gensim's default).
    seed, workers, tokenizer, columns, **options
        As in :class:`Word2Vec` (options go to ``gensim.models.Doc2Vec``).

    Notes
    -----
    A document with no word in the trained vocabulary gets a row of zeros (its
    inferred vector would be the random starting vector).

    Attributes
    ----------
    model_ : gensim.models.Doc2Vec
    input_kind : str
        ``"text"``: a ``Representations`` container hands :meth:`fit` and
        :meth:`transform` a list of strings (one text column).

    Examples
    --------
    >>> docs = ["good film", "bad film", "good plot", "bad plot"] * 10
    >>> d2v = Doc2Vec(vector_size=4, min_count=1, seed=1).fit(docs)
    >>> bool((d2v.transform(["good film"]) == d2v.transform(["good film"])).all())
    True
    """

    def __init__(
        self,
        vector_size: int = 100,
        *,
        dm: int = 1,
        window: int = 5,
        min_count: int = 5,
        epochs: int = 10,
        seed: int | None = None,
        workers: int | None = None,
        tokenizer: Tokenizer | None = None,
        columns: str | Sequence[str] | None = None,
        **options: Any,
    ):
        options = {"dm": dm, **self._shared_options(window, min_count, epochs), **options}
        super().__init__(vector_size, seed, workers, tokenizer, columns, options)

    def __repr__(self):
        return self._repr(vector_size=self.vector_size, dm=self.options["dm"], seed=self.seed)

    def _fit_model(self, token_lists: list[list[str]], settings: dict) -> None:
        from gensim.models.doc2vec import Doc2Vec as GensimDoc2Vec
        from gensim.models.doc2vec import TaggedDocument

        tagged = [TaggedDocument(tokens, [i]) for i, tokens in enumerate(token_lists)]
        model = GensimDoc2Vec(**settings)
        self._train(model, tagged)
        self.model_ = model
        self.inference_seed_ = settings["seed"]

    def transform(self, documents: Any) -> np.ndarray:
        """Inferred vector of each document, shape (n_documents, vector_size).

        Parameters
        ----------
        documents : list of str
            The documents (one string per row).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> docs = ["good film", "bad film", "good plot", "bad plot"] * 10
        >>> d2v = pearl.Doc2Vec(vector_size=4, min_count=1, seed=1).fit(docs)
        >>> d2v.transform(["good film", "a new document"]).shape
        (2, 4)
        """
        check_fitted(self, "model_")
        model = self.model_
        token_lists = self._tokens(documents)
        out = np.zeros((len(token_lists), self.vector_size))
        saved_random = model.random
        try:
            for row, tokens in enumerate(token_lists):
                if any(word in model.wv.key_to_index for word in tokens):
                    key = _document_key(self.inference_seed_, tokens)
                    out[row] = infer_vector(
                        model, tokens, _starting_vector(key, self.vector_size), key
                    )
        finally:
            model.random = saved_random
        return out


def _document_key(seed: int, tokens: list[str]) -> int:
    digest = hashlib.blake2b(
        " ".join(tokens).encode("utf-8"), digest_size=8, key=str(seed).encode()
    )
    return int.from_bytes(digest.digest(), "little")


def _starting_vector(key: int, size: int) -> np.ndarray:
    """Uniform on (-0.5/size, 0.5/size), the distribution gensim starts inference from."""
    generator = np.random.Generator(np.random.SFC64(key))
    return (generator.random(size).astype(np.float32) - 0.5) / size


def infer_vector(model: GensimDoc2Vec, words: list[str], start: np.ndarray, key: int) -> np.ndarray:
    """gensim's ``Doc2Vec.infer_vector`` from a given starting vector and sampling seed.

    The loop is gensim's (same learning-rate schedule and training kernels); only
    the two sources of randomness are supplied by the caller.
    """
    from gensim import matutils
    from gensim.models.doc2vec_inner import (
        train_document_dbow,
        train_document_dm,
        train_document_dm_concat,
    )

    model.random = np.random.RandomState(key % 2**32)
    doctag_vectors = np.array(start, dtype=np.float32).reshape(1, -1)
    lock = np.ones(1, dtype=np.float32)
    work = np.zeros(model.layer1_size, dtype=np.float32)
    neu1 = matutils.zeros_aligned(model.layer1_size, dtype=np.float32)
    alpha, epochs = model.alpha, model.epochs
    alpha_delta = (alpha - model.min_alpha) / max(epochs - 1, 1)
    # only the document's own vector learns; the words and the hidden layer stay as trained
    frozen = {"learn_words": False, "learn_hidden": False, "doctag_vectors": doctag_vectors,
              "doctags_lockf": lock}
    for _ in range(epochs):
        if model.sg:
            train_document_dbow(model, words, [0], alpha, work, **frozen)
        else:
            train = train_document_dm_concat if model.dm_concat else train_document_dm
            train(model, words, [0], alpha, work, neu1, **frozen)
        alpha -= alpha_delta
    return doctag_vectors[0].astype(np.float64)
