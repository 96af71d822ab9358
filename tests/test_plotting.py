"""Every plot renders to PNG (Agg) and draws the numbers it claims to draw."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import pearlstats as pearl  # noqa: E402
from pearlstats.plotting import (  # noqa: E402
    plot_block_importance,
    plot_cv_risk,
    plot_risk_ratio,
    plot_weight_stability,
    plot_weights,
)

NAMES = ["pca", "kpca_rbf", "kpca_poly"]


@pytest.fixture(scope="module")
def res(paper_data):
    blocks = {name: paper_data["blocks"][name] for name in NAMES}
    return pearl.fit("y ~ block(pca) + block(kpca_rbf) + block(kpca_poly)", paper_data["frame"], blocks=blocks, seed=4)


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    data = buffer.getvalue()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    return data


def _bar_heights(ax):
    return np.array([patch.get_height() for patch in ax.patches])


def test_weights_bar_chart(res):
    figure = plot_weights(res)
    _png(figure)
    ax = figure.axes[0]
    nonzero = np.sort(res.weights[res.weights > 0].to_numpy())[::-1]
    np.testing.assert_allclose(_bar_heights(ax), nonzero)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(res.weights[res.weights > 0].sort_values(ascending=False).index)
    assert len(plot_weights(res, include_zero=True).axes[0].patches) == len(res.weights)


def test_cv_risk_with_standard_errors(res, paper_data):
    figure = plot_cv_risk(res)
    _png(figure)
    ax = figure.axes[0]
    y = paper_data["frame"]["y"].to_numpy()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert sorted(labels) == sorted(res.candidate_labels)
    losses = (y[:, None] - res.cv_predictions[labels].to_numpy()) ** 2
    np.testing.assert_allclose(_bar_heights(ax), losses.mean(axis=0))
    # error bars span risk +- SE
    segments = ax.collections[0].get_segments()
    spans = np.array([seg[1, 1] - seg[0, 1] for seg in segments])
    np.testing.assert_allclose(spans, 2 * losses.std(axis=0, ddof=1) / np.sqrt(len(y)))
    pearl_line = next(line for line in ax.get_lines() if line.get_label() == "PEARL").get_ydata()[0]
    assert pearl_line == pytest.approx(np.mean((y - res.cv_predictions.to_numpy() @ res.weights.to_numpy()) ** 2))


def test_block_importance_bars(res):
    figure = plot_block_importance(res)
    _png(figure)
    widths = [patch.get_width() for patch in figure.axes[0].patches]
    expected = [res.weights[[l for l in res.candidate_labels if name in l.split("+")]].sum() for name in NAMES]
    np.testing.assert_allclose(widths, expected)


def test_weight_stability_boxes(res):
    figure = plot_weight_stability(res)
    _png(figure)
    ax = figure.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    resamples = res.weight_stability
    assert set(labels) == set(resamples.index[(resamples > 0).any(axis=1) | (res.weights > 0)])
    medians = [line.get_ydata()[0] for line in ax.get_lines() if line.get_color() in ("C1", "#ff7f0e")]
    np.testing.assert_allclose(medians, resamples.loc[labels].median(axis=1))
    boot = res.resample_weights("bootstrap", n_resamples=5)
    _png(plot_weight_stability(res, resamples=boot))


def test_risk_ratio_curve_against_n():
    rng = np.random.default_rng(0)
    methods = ["PEARL", "Best", "MS"]
    evaluations = {
        n: [pd.DataFrame({"MSE": rng.uniform(1, 2, 3)}, index=methods) for _ in range(4)] for n in (100, 200, 400)
    }
    figure = plot_risk_ratio(evaluations)
    _png(figure)
    by_label = {container.get_label(): container.lines[0] for container in figure.axes[0].containers}
    for method in ("Best", "MS"):
        expected = [np.mean([run.loc["PEARL", "MSE"] / run.loc[method, "MSE"] for run in evaluations[n]])
                    for n in (100, 200, 400)]
        np.testing.assert_allclose(np.asarray(by_label[method].get_xdata(), dtype=float), [100, 200, 400])
        np.testing.assert_allclose(np.asarray(by_label[method].get_ydata(), dtype=float), expected)
    with pytest.raises(pearl.OptionError, match="accuracy"):
        plot_risk_ratio(evaluations, metric="accuracy")


def test_plots_draw_on_a_given_axes(res):
    figure = Figure()
    ax = figure.subplots()
    assert plot_weights(res, ax=ax) is figure
