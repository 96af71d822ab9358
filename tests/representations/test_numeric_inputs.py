"""Inputs of the numeric learners used on their own (found by the audit of the learners).

A learner fitted on a DataFrame read a DataFrame given to transform by position,
so reordered columns gave every score from the wrong inputs without a word.
Complex inputs lost their imaginary parts with only a numpy ComplexWarning.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.decomposition import PCA as SklearnPCA

from pearlstats.exceptions import DataError
from pearlstats.representations import PCA, KernelPCA, Raw, Representations


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(11)
    values = rng.normal(size=(60, 3)) * [3.0, 1.0, 0.5] + [1.0, -2.0, 0.0]
    return pd.DataFrame(values, columns=["a", "b", "c"])


LEARNERS = {
    "PCA": lambda: PCA(2),
    "PCA-standardize": lambda: PCA(2, standardize=True),
    "Raw": lambda: Raw(standardize=True),
    "KernelPCA": lambda: KernelPCA(2, kernel="poly", method="exact"),
}


@pytest.mark.parametrize("make", LEARNERS.values(), ids=LEARNERS.keys())
def test_reordered_dataframe_columns_are_read_by_name(frame, make):
    learner = make().fit(frame)
    expected = learner.transform(frame.to_numpy())  # positional, in the fitted order
    np.testing.assert_allclose(learner.transform(frame[["c", "a", "b"]]), expected,
                               rtol=1e-12, atol=1e-12)


def test_reordered_columns_give_sklearn_scores(frame):
    reference = SklearnPCA(2).fit(frame.to_numpy()).transform(frame.to_numpy())
    ours = PCA(2).fit(frame).transform(frame[["b", "c", "a"]])
    signs = np.sign(np.sum(ours * reference, axis=0))
    np.testing.assert_allclose(ours, reference * signs, atol=1e-10)


@pytest.mark.parametrize("make", LEARNERS.values(), ids=LEARNERS.keys())
def test_dataframe_with_other_columns_names_them(frame, make):
    learner = make().fit(frame)
    renamed = frame.rename(columns={"b": "B"})
    message = (
        r"was fitted on a DataFrame with columns \['a', 'b', 'c'\], but got columns "
        r"\['a', 'B', 'c'\] \(missing \['b'\], not seen at fit \['B'\]\)"
    )
    with pytest.raises(DataError, match=message):
        learner.transform(renamed)


def test_arrays_are_still_read_by_position(frame):
    from_frame = PCA(2).fit(frame)
    from_array = PCA(2).fit(frame.to_numpy())
    assert from_frame.feature_names_in_ == ["a", "b", "c"]
    assert from_array.feature_names_in_ is None
    np.testing.assert_allclose(from_frame.transform(frame.to_numpy()[:5]),
                               from_array.transform(frame[["a", "b", "c"]].head(5)))
    # a refit on an array forgets the names
    assert from_frame.fit(frame.to_numpy()).feature_names_in_ is None


@pytest.mark.parametrize("make", LEARNERS.values(), ids=LEARNERS.keys())
def test_complex_inputs_are_refused_not_cast(frame, make):
    values = frame.to_numpy() + 1j
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # before: a numpy ComplexWarning, then real parts only
        with pytest.raises(DataError, match="complex values"):
            make().fit(values)
        learner = make().fit(frame.to_numpy())
        with pytest.raises(DataError, match="complex values"):
            learner.transform(values)


def test_representations_refuse_a_complex_column(frame):
    rows = frame.assign(b=frame["b"] + 1j)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DataError, match="needs numeric columns, but column 'b' has dtype "
                                            "complex128"):
            Representations({"pca": PCA(2)}).fit(rows)


def test_autoencoder_reads_reordered_dataframe_columns_by_name(frame):
    pytest.importorskip("torch")
    from pearlstats.representations.deep import Autoencoder

    learner = Autoencoder(latent_dim=2, hidden_dim=8, epochs=1, batch_size=16, progress=False,
                          seed=3).fit(frame)
    np.testing.assert_allclose(learner.transform(frame[["c", "b", "a"]]),
                               learner.transform(frame.to_numpy()), rtol=1e-12, atol=1e-12)
    with pytest.raises(DataError, match=r"missing \['b'\], not seen at fit \['B'\]"):
        learner.transform(frame.rename(columns={"b": "B"}))
    with pytest.raises(DataError, match="complex values"):
        learner.transform(frame.to_numpy() + 1j)


ZERO_WIDTH = {**LEARNERS, "Raw-plain": lambda: Raw(), "KernelPCA-default": lambda: KernelPCA(1)}


@pytest.mark.parametrize("make", ZERO_WIDTH.values(), ids=ZERO_WIDTH.keys())
def test_no_input_columns_are_refused_by_name(make):
    # KernelPCA divided by the width (ZeroDivisionError), Raw made a zero-width block
    name = type(make()).__name__
    with pytest.raises(DataError, match=rf"{name} got no columns \(shape \(12, 0\)\)"):
        make().fit(np.zeros((12, 0)))


@pytest.mark.parametrize("make", LEARNERS.values(), ids=LEARNERS.keys())
def test_a_ragged_list_is_refused_in_the_learners_words(make):
    # np.iscomplexobj ran before the conversion and raised numpy's own ValueError
    name = type(make()).__name__
    with pytest.raises(DataError, match=f"{name} needs numeric input.*inhomogeneous"):
        make().fit([[1.0, 2.0], [3.0, 4.0, 5.0]])


@pytest.mark.parametrize("make", LEARNERS.values(), ids=LEARNERS.keys())
def test_pd_na_of_a_nullable_float_frame_is_missing_as_nan_is(frame, make):
    from pearlstats.exceptions import MissingValueError

    nullable = frame.astype("Float64")
    nullable.iloc[4, 1] = pd.NA  # was "could not convert ... not 'NAType'"
    with pytest.raises(MissingValueError, match="NaN or infinite values in row 4"):
        make().fit(nullable)
    # complete nullable columns are read as their float64 values; the copy's memory order
    # may differ from the frame's own array, so BLAS may sum in another order: rounding only
    np.testing.assert_allclose(make().fit(frame.astype("Float64")).transform(frame),
                               make().fit(frame).transform(frame), rtol=1e-12, atol=1e-12)


def test_not_fitted_is_a_value_and_attribute_error_as_in_scikit_learn():
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError
    from sklearn.utils.estimator_checks import check_transformers_unfitted

    from pearlstats.exceptions import NotFittedError
    from pearlstats.representations import BagOfWords

    # scikit-learn's NotFittedError is both; RuntimeError kept for code that caught it so
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    assert issubclass(NotFittedError, RuntimeError)
    assert set(SklearnNotFittedError.__bases__) <= set(NotFittedError.__mro__)
    for make in LEARNERS.values():
        check_transformers_unfitted(type(make()).__name__, make())
    # a fitted attribute that is a property is absent before fit, as scikit-learn's are
    assert not hasattr(BagOfWords(), "vocabulary_")
    assert sorted(BagOfWords().fit(["good film", "bad film"]).vocabulary_) == [
        "bad", "film", "good"]
    # pearl.fit still says an unfitted Representations without columns= needs fitting
    # (it reads its input_columns, a property: a getattr default would swallow the error)
    rows = pd.DataFrame(np.random.default_rng(0).normal(size=(30, 3)), columns=["a", "b", "y"])
    import pearlstats as pearl

    with pytest.raises(NotFittedError, match="known only after fit"):
        pearl.fit("y ~ block(p)", rows, blocks=Representations({"p": PCA(1)}), seed=0)
