"""Tests for pearlstats.datasets: the paper's simulation and the bundled-data loaders.

Statistical checks use fixed seeds (so they are deterministic) and tolerances of
about five standard errors of the statistic at the sample size used.
"""

from __future__ import annotations

import gzip
import sys
import types
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pearlstats.datasets import (
    COEFFICIENT_NAMES,
    DIGITS_IMAGE_SHAPE,
    MissingDependencyError,
    SimulatedData,
    load_diabetes,
    load_digits,
    load_lee_background,
    load_polarity,
    paper_features,
    real,
    simulate_paper,
)
from pearlstats.exceptions import DataError, OptionError, PearlError


# ---- simulate_paper: reproducibility and the documented random streams ---------------------------
def test_same_seed_reproduces_every_part():
    a = simulate_paper(50, N=80, n_test=30, sigma=0.9, seed=11)
    b = simulate_paper(50, N=80, n_test=30, sigma=0.9, seed=11)
    for part in ("labeled", "unlabeled", "test"):
        pd.testing.assert_frame_equal(getattr(a, part), getattr(b, part))
    assert a.coefficients == b.coefficients and a.seed == b.seed == 11


def test_different_seeds_differ():
    a = simulate_paper(50, N=80, n_test=30, seed=1)
    b = simulate_paper(50, N=80, n_test=30, seed=2)
    assert a.coefficients != b.coefficients
    for part in ("labeled", "unlabeled", "test"):
        assert not np.allclose(getattr(a, part).to_numpy(), getattr(b, part).to_numpy())


def test_draws_follow_the_documented_streams():
    """Rebuild a draw with numpy alone from the module's description of the streams."""
    n, N, n_test, sigma, seed = 40, 25, 15, 0.7, 2024
    data = simulate_paper(n, N=N, n_test=n_test, sigma=sigma, seed=seed)
    coef_rng, unl_rng, lab_rng, test_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)
    )
    b0, b1, b2, a1, a2, g = coef_rng.normal(0.0, 0.3, size=6)
    assert list(data.coefficients) == list(COEFFICIENT_NAMES)
    np.testing.assert_array_equal(list(data.coefficients.values()), [b0, b1, b2, a1, a2, g])
    np.testing.assert_array_equal(
        data.unlabeled[["x1", "x2"]].to_numpy(), unl_rng.standard_normal((N, 2))
    )
    for frame, rng, rows in ((data.labeled, lab_rng, n), (data.test, test_rng, n_test)):
        draws = rng.standard_normal((rows, 3))
        x1, x2 = draws[:, 0], draws[:, 1]
        y = (
            b0
            + b1 * x1
            + b2 * x2
            + a1 * x1**2
            + a2 * x2**2
            + g * x1 * x2
            + np.sin(x1) ** 2
            + sigma * draws[:, 2]
        )
        np.testing.assert_array_equal(frame[["x1", "x2"]].to_numpy(), draws[:, :2])
        np.testing.assert_allclose(frame["y"].to_numpy(), y, rtol=0, atol=1e-12)


def test_shapes_columns_and_types():
    data = simulate_paper(30, N=70, n_test=20, seed=0)
    assert isinstance(data, SimulatedData)
    assert data.labeled.columns.tolist() == ["x1", "x2", "y"] and len(data.labeled) == 30
    assert data.unlabeled.columns.tolist() == ["x1", "x2"] and len(data.unlabeled) == 70
    assert data.test.columns.tolist() == ["x1", "x2", "y"] and len(data.test) == 20
    assert all(dtype == np.float64 for dtype in data.labeled.dtypes)
    assert simulate_paper(5, seed=0).test.shape == (0, 3)  # n_test defaults to 0
    with pytest.raises(AttributeError):
        data.sigma = 1.0  # frozen


def test_parts_are_independent_of_the_other_sizes():
    base = simulate_paper(100, N=50, n_test=10, seed=5)
    bigger = simulate_paper(150, N=500, n_test=0, seed=5)
    pd.testing.assert_frame_equal(bigger.labeled.iloc[:100], base.labeled)  # nested in n
    pd.testing.assert_frame_equal(bigger.unlabeled.iloc[:50], base.unlabeled)
    assert bigger.coefficients == base.coefficients


def test_sigma_scales_the_same_noise():
    low = simulate_paper(60, N=0, sigma=0.5, seed=9)
    high = simulate_paper(60, N=0, sigma=1.5, seed=9)
    pd.testing.assert_frame_equal(low.labeled[["x1", "x2"]], high.labeled[["x1", "x2"]])
    eps_low = low.labeled["y"] - low.conditional_mean(low.labeled)
    eps_high = high.labeled["y"] - high.conditional_mean(high.labeled)
    np.testing.assert_allclose(eps_high, 3 * eps_low, rtol=1e-12, atol=1e-12)


def test_given_coefficients_are_used_and_leave_the_inputs_unchanged():
    given = {
        "beta0": 1.0,
        "beta1": -2.0,
        "beta2": 0.5,
        "alpha1": 0.25,
        "alpha2": -0.75,
        "gamma": 1.5,
    }
    drawn = simulate_paper(20, N=10, seed=3)
    fixed = simulate_paper(20, N=10, seed=3, coefficients=given)
    as_list = simulate_paper(20, N=10, seed=3, coefficients=list(given.values()))
    assert fixed.coefficients == given == as_list.coefficients
    pd.testing.assert_frame_equal(fixed.labeled[["x1", "x2"]], drawn.labeled[["x1", "x2"]])
    x1, x2 = 0.3, -1.2
    by_hand = (
        1.0 - 2.0 * x1 + 0.5 * x2 + 0.25 * x1**2 - 0.75 * x2**2 + 1.5 * x1 * x2 + np.sin(x1) ** 2
    )
    got = fixed.conditional_mean(pd.DataFrame({"x1": [x1], "x2": [x2]}, index=[7]))
    assert got.index.tolist() == [7]
    assert got.iloc[0] == pytest.approx(by_hand, abs=1e-14)


def test_seed_none_records_a_reproducible_seed():
    data = simulate_paper(10, N=5, seed=None)
    again = simulate_paper(10, N=5, seed=data.seed)
    pd.testing.assert_frame_equal(data.labeled, again.labeled)


# ---- simulate_paper: the distribution ------------------------------------------------------------
def test_residual_variance_matches_sigma_squared():
    # n = 200_000: sd of the sample variance is sigma^2 sqrt(2/n) ~ 0.32 % of sigma^2; 5 sd = 1.6 %
    n, sigma = 200_000, 0.9
    data = simulate_paper(n, N=0, sigma=sigma, seed=123)
    eps = (data.labeled["y"] - data.conditional_mean(data.labeled)).to_numpy()
    assert abs(eps.var(ddof=1) / sigma**2 - 1) < 5 * np.sqrt(2 / n)
    assert abs(eps.mean()) < 5 * sigma / np.sqrt(n)
    assert abs(np.corrcoef(eps, data.labeled["x1"])[0, 1]) < 5 / np.sqrt(n)


def test_inputs_are_standard_bivariate_normal():
    # N = 100_000: se of a mean / covariance entry is about 1/sqrt(N) (sqrt(2/N) for variances)
    x = simulate_paper(1, N=100_000, seed=8).unlabeled.to_numpy()
    tol = 5 * np.sqrt(2 / len(x))
    np.testing.assert_allclose(x.mean(axis=0), 0, atol=tol)
    np.testing.assert_allclose(np.cov(x.T), np.eye(2), atol=tol)


def test_coefficients_are_independent_normal_with_sd_0_3():
    # 1000 seeds x 6 coefficients: se of the pooled sd is 0.3 / sqrt(2 * 6000) ~ 0.0027
    draws = np.array(
        [list(simulate_paper(1, N=0, seed=s).coefficients.values()) for s in range(1000)]
    )
    pooled_sd = draws.std(ddof=1)
    assert abs(pooled_sd - 0.3) < 5 * 0.3 / np.sqrt(2 * draws.size)
    per_coefficient = draws.std(axis=0, ddof=1)
    assert np.all(np.abs(per_coefficient - 0.3) < 5 * 0.3 / np.sqrt(2 * len(draws)))
    assert np.all(np.abs(draws.mean(axis=0)) < 5 * 0.3 / np.sqrt(len(draws)))
    off_diagonal = np.corrcoef(draws.T)[~np.eye(6, dtype=bool)]
    assert np.all(np.abs(off_diagonal) < 5 / np.sqrt(len(draws)))
    assert stats.kstest(draws.ravel(), "norm", args=(0.0, 0.3)).pvalue > 1e-3


def test_paper_features_give_a_correctly_specified_linear_model():
    """OLS on the six features (plus intercept) recovers the coefficients; residual variance ~
    sigma^2."""
    data = simulate_paper(20_000, N=0, sigma=0.5, seed=4)
    features = paper_features(data.labeled)
    assert features.columns.tolist() == ["x1", "x2", "x1_sq", "x2_sq", "x1_x2", "sin2_x1"]
    X = np.column_stack([np.ones(len(features)), features.to_numpy()])
    beta, *_ = np.linalg.lstsq(X, data.labeled["y"].to_numpy(), rcond=None)
    c = data.coefficients
    truth = [c["beta0"], c["beta1"], c["beta2"], c["alpha1"], c["alpha2"], c["gamma"], 1.0]
    # the largest OLS standard error here is ~0.012 (sin^2 x1, correlated with x1^2); 5 se = 0.06
    np.testing.assert_allclose(beta, truth, atol=0.06)
    np.testing.assert_allclose(
        X @ np.r_[truth], data.conditional_mean(data.labeled).to_numpy(), atol=1e-12
    )


# ---- simulate_paper: bad input -------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"n": 0}, "n=0"),
        ({"n": 2.5}, "n=2.5"),
        ({"n": 10, "N": -1}, "N=-1"),
        ({"n": 10, "n_test": True}, "n_test=True"),
        ({"n": 10, "sigma": -0.1}, "sigma=-0.1"),
        ({"n": 10, "sigma": float("nan")}, "sigma=nan"),
        ({"n": 10, "seed": "abc"}, "seed='abc'"),
        ({"n": 10, "coefficients": [1.0, 2.0]}, "6 in the order"),
        ({"n": 10, "coefficients": {"beta0": 1.0}}, "missing ['alpha1'"),
        ({"n": 10, "coefficients": [1, 2, 3, 4, 5, float("inf")]}, "finite"),
    ],
)
def test_bad_options_name_the_option(kwargs, fragment):
    n = kwargs.pop("n")
    with pytest.raises(OptionError, match=fragment.replace("[", r"\[").replace("(", r"\(")):
        simulate_paper(n, **kwargs)


def test_conditional_mean_names_missing_columns():
    data = simulate_paper(5, N=0, seed=0)
    with pytest.raises(DataError, match=r"\['x2'\]"):
        data.conditional_mean(pd.DataFrame({"x1": [0.0]}))
    with pytest.raises(DataError, match="DataFrame"):
        paper_features(np.zeros((3, 2)))


# ---- loaders -------------------------------------------------------------------------------------
def test_load_digits_matches_the_raw_file_and_the_images():
    from sklearn.datasets import load_digits as sklearn_digits

    frame = load_digits()
    assert frame.shape == (1797, 65)
    assert frame.columns.tolist() == [f"p{k}" for k in range(64)] + ["label"]
    assert frame.attrs["image_shape"] == DIGITS_IMAGE_SHAPE == (8, 8)
    with gzip.open(resources.files("sklearn.datasets").joinpath("data", "digits.csv.gz")) as handle:
        raw = np.loadtxt(handle, delimiter=",")
    np.testing.assert_array_equal(frame.iloc[:, :64].to_numpy(), raw[:, :64])
    np.testing.assert_array_equal(frame["label"].to_numpy(), raw[:, 64].astype(int))
    assert frame["label"].dtype == np.int64
    images = sklearn_digits().images
    for i in (0, 500, 1796):
        np.testing.assert_array_equal(
            frame.iloc[i, :64].to_numpy().reshape(DIGITS_IMAGE_SHAPE), images[i]
        )


def _gensim_bytes(name: str) -> bytes:
    import gensim

    path = resources.files(gensim).joinpath("test", "test_data", name)
    return path.read_bytes()


def test_load_polarity_labels_and_text_match_the_raw_file():
    raw_lines = _gensim_bytes("pang_lee_polarity.cor").split(b"\n")
    raw_lines = [line for line in raw_lines if line.strip()]
    n_pos = sum(line.startswith(b"__label__pos ") for line in raw_lines)
    n_neg = sum(line.startswith(b"__label__neg ") for line in raw_lines)
    frame = load_polarity()
    assert frame.columns.tolist() == ["text", "label"] and len(frame) == len(raw_lines) == 200
    assert (n_pos, n_neg) == (100, 100)
    assert frame["label"].sum() == n_pos and (frame["label"] == 0).sum() == n_neg
    expected_labels = [1 if line.startswith(b"__label__pos") else 0 for line in raw_lines]
    assert frame["label"].tolist() == expected_labels
    assert frame.loc[31, "text"] == "the action clich\u00e9s just pile up ."
    # strict decoding succeeds and leaves no C1 control characters (0x97 is the cp1252 em dash)
    assert not frame["text"].str.contains("[\u0080-\u009f]", regex=True).any()
    assert frame["text"].str.contains("\u2014").sum() == 2
    assert not frame["text"].str.startswith("__label__").any()


def test_load_polarity_encoding_option():
    latin1 = load_polarity(encoding="latin-1")
    assert latin1["text"].str.contains("\u0097").any()
    with pytest.raises(OptionError, match="encoding='ascii'"):
        load_polarity(encoding="ascii")


def test_load_lee_background_is_one_document_per_line():
    raw = _gensim_bytes("lee_background.cor")
    raw.decode("ascii")  # plain ASCII: decodes strictly
    documents = [line.decode("ascii").strip() for line in raw.split(b"\n") if line.strip()]
    corpus = load_lee_background()
    assert corpus.columns.tolist() == ["text"] and len(corpus) == len(documents) == 300
    assert corpus["text"].tolist() == documents
    assert corpus["text"].iloc[0].startswith("Hundreds of people have been forced")


def test_load_diabetes_matches_the_raw_measurements():
    frame = load_diabetes(scaled=False)
    assert frame.shape == (442, 11)
    assert frame.columns.tolist() == [
        "age",
        "sex",
        "bmi",
        "bp",
        "s1",
        "s2",
        "s3",
        "s4",
        "s5",
        "s6",
        "progression",
    ]
    data_dir = resources.files("sklearn.datasets").joinpath("data")
    with gzip.open(data_dir.joinpath("diabetes_data_raw.csv.gz")) as handle:
        raw = np.loadtxt(handle)
    with gzip.open(data_dir.joinpath("diabetes_target.csv.gz")) as handle:
        target = np.loadtxt(handle)
    np.testing.assert_allclose(frame.iloc[:, :10].to_numpy(), raw)
    np.testing.assert_allclose(frame["progression"].to_numpy(), target)
    # scaled: each raw column centred and divided by its Euclidean norm (scikit-learn's documented
    # scaling)
    scaled = load_diabetes()
    centred = raw - raw.mean(axis=0)
    np.testing.assert_allclose(
        scaled.iloc[:, :10].to_numpy(), centred / np.linalg.norm(centred, axis=0), atol=1e-8
    )
    with pytest.raises(OptionError, match="scaled='yes'"):
        load_diabetes(scaled="yes")


# ---- loaders: missing packages and files ---------------------------------------------------------
@pytest.mark.parametrize(
    "loader, hidden, command",
    [
        (load_digits, ("sklearn", "sklearn.datasets"), "pip install scikit-learn"),
        (load_diabetes, ("sklearn", "sklearn.datasets"), "pip install scikit-learn"),
        (load_polarity, ("gensim",), "pip install gensim"),
        (load_lee_background, ("gensim",), "pip install gensim"),
    ],
)
def test_missing_package_names_it_and_the_pip_command(monkeypatch, loader, hidden, command):
    for module in hidden:
        monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    with pytest.raises(MissingDependencyError, match=command) as info:
        loader()
    assert isinstance(info.value, ImportError) and isinstance(info.value, PearlError)
    assert loader.__name__ in str(info.value)


def test_missing_gensim_test_data_is_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(real, "resources", types.SimpleNamespace(files=lambda package: tmp_path))
    with pytest.raises(MissingDependencyError, match="pang_lee_polarity.cor.*--force-reinstall"):
        load_polarity()
