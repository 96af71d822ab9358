"""Shared fixtures: the paper's simulation with blocks computed by scikit-learn.

The blocks come from scikit-learn (not from pearlstats' own learners), so the
core's tests do not depend on the representation code they would otherwise
share bugs with.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def paper_rows(n: int, rng: np.random.Generator, sigma: float = 0.5, coefs=None):
    """Rows from the paper's eq. (dgp1): quadratic + interaction + sin^2 signal."""
    b0, b1, b2, a1, a2, g = coefs
    x = rng.normal(size=(n, 2))
    mean = (
        b0
        + b1 * x[:, 0]
        + b2 * x[:, 1]
        + a1 * x[:, 0] ** 2
        + a2 * x[:, 1] ** 2
        + g * x[:, 0] * x[:, 1]
    )
    mean = mean + np.sin(x[:, 0]) ** 2
    return x, mean + rng.normal(scale=sigma, size=n)


def separated_binomial(n: int = 60, seed: int = 5) -> tuple[np.ndarray, dict]:
    """Block s separates the classes (its first column's sign is the class); block a does not."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, 2))
    y = (a[:, 0] + rng.logistic(size=n) > 0).astype(float)
    s = np.column_stack(
        [np.where(y == 1, 1.0, -1.0) * rng.uniform(0.5, 2.0, size=n), rng.normal(size=n)]
    )
    return y, {"a": a, "s": s}


def overlapping_binomial(n: int = 60) -> tuple[np.ndarray, dict]:
    """Block s separates the classes except at rows 16 and 22 (class 1 on class 0's side).

    A training set separates (for s and a+s) only when it holds out both rows. With ``seed=1``
    (``cv=5``, ``honest=5``) the fit's CV and outer fold 1 hold them out together, the inner
    folds of outer folds 0, 2, 3 and 4 keep them apart (so re-runs there choose no ridge).
    """
    y, blocks = separated_binomial(n)
    blocks["s"][[16, 22]] = [-1.0, 0.0]
    return y, blocks


def simplex_minimum(objective, J: int, jac=None, ftol: float = 1e-15) -> tuple[np.ndarray, float]:
    """An independent simplex minimum for the tests: scipy's SLSQP over {w >= 0, sum w = 1}
    from the centre and from every vertex, the best result (weights, objective)."""
    from scipy.optimize import minimize

    best = None
    for start in [np.full(J, 1.0 / J)] + list(np.eye(J)):
        result = minimize(objective, start, jac=jac, method="SLSQP", bounds=[(0, 1)] * J,
                          constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}],
                          options={"ftol": ftol, "maxiter": 1000})
        if best is None or result.fun < best.fun:
            best = result
    return best.x, float(best.fun)


def sklearn_blocks(unlabeled: np.ndarray, rows: dict) -> dict:
    """PCA + four kernel PCAs (2 components each) fitted on unlabeled rows."""
    from sklearn.decomposition import PCA, KernelPCA

    learners = {
        "pca": PCA(n_components=2),
        "kpca_rbf": KernelPCA(n_components=2, kernel="rbf", gamma=0.5),
        "kpca_poly": KernelPCA(n_components=2, kernel="poly", degree=2, coef0=1.0),
        "kpca_sigmoid": KernelPCA(n_components=2, kernel="sigmoid", gamma=0.1, coef0=0.5),
        "kpca_cosine": KernelPCA(n_components=2, kernel="cosine"),
    }
    out = {key: {} for key in rows}
    for name, learner in learners.items():
        learner.fit(unlabeled)
        for key, x in rows.items():
            out[key][name] = learner.transform(x)
    return out


def refused_command(main, argv: list, capsys, tmp_path) -> str:
    """What the command ``main(argv)`` prints to stderr, which must be an argparse error (a
    usage line, exit status 2); ``{tmp}`` in *argv* is *tmp_path*."""
    with pytest.raises(SystemExit) as exited:
        main([part.format(tmp=tmp_path) for part in argv])
    assert exited.value.code == 2
    printed = capsys.readouterr().err
    assert printed.startswith("usage: python -m pearlstats.")
    return printed


@pytest.fixture(scope="session")
def paper_data():
    """Labeled (n=200), test (n=300) rows and their 5 blocks; N=600 unlabeled rows."""
    rng = np.random.default_rng(20240601)
    coefs = rng.normal(scale=0.3, size=6)
    unlabeled, _ = paper_rows(600, rng, coefs=coefs)
    x, y = paper_rows(200, rng, coefs=coefs)
    x_test, y_test = paper_rows(300, rng, coefs=coefs)
    blocks = sklearn_blocks(unlabeled, {"train": x, "test": x_test})
    frame = pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "y": y})
    test = pd.DataFrame({"x1": x_test[:, 0], "x2": x_test[:, 1], "y": y_test})
    return {"frame": frame, "blocks": blocks["train"], "test": test, "test_blocks": blocks["test"]}


PAPER_FORMULA = (
    "y ~ block(pca) + block(kpca_rbf) + block(kpca_poly) + block(kpca_sigmoid) + block(kpca_cosine)"
)


@pytest.fixture(scope="session", autouse=True)
def tracked_files_unchanged():
    """Fail the session if any test changed a tracked file (skipped outside a git checkout)."""
    from pathlib import Path

    from test_tracked_files import tracked_state

    root = Path(__file__).resolve().parents[1]
    before = tracked_state(root)
    yield
    if before is not None:
        assert tracked_state(root) == before, (
            "the test suite changed tracked files: see `git status`"
        )


@pytest.fixture
def synchronous_dask():
    """Dask's synchronous scheduler: the partitions' tasks run in order in this process (no
    thread pool on a machine the tests share; an error's traceback is the task's).

    Here, not in a tests/distributed/conftest.py: the test modules import helpers with
    ``from conftest import ...``, which a second conftest module would shadow.
    """
    dask = pytest.importorskip("dask", reason="dask is not installed")
    with dask.config.set(scheduler="synchronous"):
        yield
