"""Golden numbers of five fits, made before the architecture change (issue 14).

Run from the repository root at the commit whose numbers are to be fixed:

    python tests/results/reference/make_golden.py tests/results/reference/golden_fits.npz

``tests/test_golden.py`` refits the same five models with the current code and
requires the same weights, CV risks, out-of-fold predictions and predictions on
new rows to 1e-12. Only the public API is used, so the script runs on any
version of the package.
"""

from __future__ import annotations

import sys

import numpy as np

import pearlstats as pearl

N_TRAIN, N_NEW = 150, 40


def golden_data(family: str, seed: int = 20261123) -> tuple[dict, dict]:
    """Three small blocks and a response of the given family; train and new rows."""
    rng = np.random.default_rng(seed)
    n = N_TRAIN + N_NEW
    a, b, c = rng.normal(size=(n, 2)), rng.normal(size=(n, 3)), rng.normal(size=(n, 2))
    eta = 0.8 * a[:, 0] - 0.6 * b[:, 1] + 0.3 * c[:, 0] * c[:, 1]
    if family == "gaussian":
        y = eta + rng.normal(scale=0.7, size=n)
    elif family == "binomial":
        y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    elif family == "poisson":
        y = rng.poisson(np.exp(0.5 * eta)).astype(float)
    else:
        scores = np.column_stack([np.zeros(n), eta, -0.7 * a[:, 1] + 0.5 * b[:, 0]])
        probabilities = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
        codes = (rng.random(n)[:, None] > probabilities.cumsum(axis=1)).sum(axis=1)
        y = np.array(["u", "v", "w"])[codes]
    x = rng.normal(size=n)
    data = {"y": y, "x": x, "a": a, "b": b, "c": c}
    train = {k: v[:N_TRAIN] for k, v in data.items()}
    new = {k: v[N_TRAIN:] for k, v in data.items()}
    return train, new


FITS = {
    "gaussian": dict(family="gaussian"),
    "binomial": dict(family="binomial"),
    "multinomial": dict(family="multinomial"),
    "poisson": dict(family="poisson"),
}


def golden_fit(name: str):
    """The fit and its new rows for one golden case (``mlp`` uses MLP candidates)."""
    family = "gaussian" if name == "mlp" else name
    train, new = golden_data(family)
    options = dict(FITS.get(name, {"family": "gaussian"}))
    if name == "mlp":
        options["downstream"] = pearl.MLP(hidden=8, epochs=30, seed=0)
    res = pearl.fit("y ~ x + block(a) + block(b) + block(c)", train, cv=5, seed=7, **options)
    return res, new


def golden_numbers(name: str) -> dict:
    res, new = golden_fit(name)
    prediction = res.predict(new)
    return {
        f"{name}/weights": res.weights.to_numpy(),
        f"{name}/cv_risk": res.cv_risk.to_numpy(),
        f"{name}/cv_predictions": res.cv_predictions.to_numpy(),
        f"{name}/predictions": np.asarray(prediction, dtype=float),
    }


CASES = ("gaussian", "binomial", "multinomial", "poisson", "mlp")


def main(path: str) -> None:
    numbers = {}
    for name in CASES:
        numbers.update(golden_numbers(name))
    np.savez(path, **numbers)
    print(f"wrote {len(numbers)} arrays to {path}")


if __name__ == "__main__":
    main(sys.argv[1])
