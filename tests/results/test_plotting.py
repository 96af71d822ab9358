"""Every plot renders to PNG (Agg), draws the numbers it claims to draw, and stays readable.

Readability is checked at J = 31 and J = 255 (8 tiny blocks, candidates="all"):
at most ~40 tick labels, and every drawn text inside the canvas, measured
through the Agg renderer's text extents.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import pearlstats as pearl  # noqa: E402
from pearlstats.plotting import (  # noqa: E402  # noqa: E402
    PearlFigure,
    PlotAccessor,
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
    return pearl.fit(
        "y ~ block(pca) + block(kpca_rbf) + block(kpca_poly)",
        paper_data["frame"],
        blocks=blocks,
        seed=4,
    )


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    data = buffer.getvalue()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    return data


def _bar_heights(ax):
    """Lengths of horizontal bars (their widths), top to bottom."""
    return np.array([patch.get_width() for patch in ax.patches])


def _ticks(ax) -> list:
    return [t.get_text() for t in ax.get_yticklabels()]


def test_weights_bar_chart(res):
    figure = plot_weights(res)
    _png(figure)
    ax = figure.axes[0]
    nonzero = np.sort(res.weights[res.weights > 0].to_numpy())[::-1]
    np.testing.assert_allclose(_bar_heights(ax), nonzero)
    assert _ticks(ax) == list(res.weights[res.weights > 0].sort_values(ascending=False).index)
    assert len(plot_weights(res, include_zero=True).axes[0].patches) == len(res.weights)


def test_cv_risk_with_standard_errors(res, paper_data):
    figure = plot_cv_risk(res)
    _png(figure)
    ax = figure.axes[0]
    y = paper_data["frame"]["y"].to_numpy()
    labels = _ticks(ax)
    assert sorted(labels) == sorted(res.candidate_labels)
    losses = (y[:, None] - res.cv_predictions[labels].to_numpy()) ** 2
    np.testing.assert_allclose(_bar_heights(ax), losses.mean(axis=0))
    # error bars span risk +- SE
    segments = ax.collections[0].get_segments()
    spans = np.array([seg[1, 0] - seg[0, 0] for seg in segments])
    np.testing.assert_allclose(spans, 2 * losses.std(axis=0, ddof=1) / np.sqrt(len(y)))
    pearl_line = next(line for line in ax.get_lines() if line.get_label() == "PEARL").get_xdata()[0]
    assert pearl_line == pytest.approx(
        np.mean((y - res.cv_predictions.to_numpy() @ res.weights.to_numpy()) ** 2)
    )


def test_block_importance_bars(res):
    figure = plot_block_importance(res)
    _png(figure)
    widths = [patch.get_width() for patch in figure.axes[0].patches]
    expected = [
        res.weights[[lab for lab in res.candidate_labels if name in lab.split("+")]].sum()
        for name in NAMES
    ]
    np.testing.assert_allclose(widths, expected)


def test_weight_stability_boxes(res):
    figure = plot_weight_stability(res)
    _png(figure)
    ax = figure.axes[0]
    labels = _ticks(ax)
    resamples = res.weight_stability
    assert set(labels) == set(resamples.index[(resamples > 0).any(axis=1) | (res.weights > 0)])
    medians = [
        line.get_xdata()[0] for line in ax.get_lines() if line.get_color() in ("C1", "#ff7f0e")
    ]
    np.testing.assert_allclose(medians, resamples.loc[labels].median(axis=1))
    boot = res.resample_weights("bootstrap", n_resamples=5)
    _png(plot_weight_stability(res, resamples=boot))


def test_risk_ratio_curve_against_n():
    rng = np.random.default_rng(0)
    methods = ["PEARL", "Best", "MS"]
    evaluations = {
        n: [pd.DataFrame({"MSE": rng.uniform(1, 2, 3)}, index=methods) for _ in range(4)]
        for n in (100, 200, 400)
    }
    figure = plot_risk_ratio(evaluations)
    _png(figure)
    by_label = {
        container.get_label(): container.lines[0] for container in figure.axes[0].containers
    }
    for method in ("Best", "MS"):
        expected = [
            np.mean([run.loc["PEARL", "MSE"] / run.loc[method, "MSE"] for run in evaluations[n]])
            for n in (100, 200, 400)
        ]
        np.testing.assert_allclose(
            np.asarray(by_label[method].get_xdata(), dtype=float), [100, 200, 400]
        )
        np.testing.assert_allclose(np.asarray(by_label[method].get_ydata(), dtype=float), expected)
    with pytest.raises(pearl.OptionError, match="accuracy"):
        plot_risk_ratio(evaluations, metric="accuracy")


def test_plots_draw_on_a_given_axes(res):
    figure = Figure()
    ax = figure.subplots()
    assert plot_weights(res, ax=ax) is figure


def _many_blocks(n_blocks: int, name: str = "representation_block_{}"):
    """A fit over every subset of *n_blocks* one-column blocks (J = 2**n_blocks - 1), with long
    names."""
    rng = np.random.default_rng(n_blocks)
    names = [name.format(i) for i in range(n_blocks)]
    data = {nm: rng.normal(size=(90, 1)) for nm in names}
    data["y"] = data[names[0]][:, 0] + 0.5 * data[names[-1]][:, 0] + rng.normal(size=90)
    formula = "y ~ " + " + ".join(f"block({nm})" for nm in names)
    return pearl.fit(formula, data, candidates="all", cv=5, seed=0)


@pytest.fixture(scope="module", params=[5, 8], ids=["J31", "J255"])
def large_res(request):
    return _many_blocks(request.param)


def _drawn_texts(figure: Figure) -> list:
    """Text artists the renderer draws: visible, non-empty, tick labels only for ticks in view."""
    texts, tick_texts = [], set()
    for ax in figure.axes:
        for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            low, high = min(low, high), max(low, high)
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                tick_texts.update((tick.label1, tick.label2))
                if low - 1e-9 <= tick.get_loc() <= high + 1e-9:
                    texts += [tick.label1, tick.label2]
    texts += [t for t in figure.findobj(Text) if t not in tick_texts]
    return [t for t in texts if t.get_visible() and t.get_text()]


@pytest.mark.parametrize("kind", ["weights", "cv_risk", "block_importance", "weight_stability"])
def test_figures_of_large_fits_are_readable(large_res, kind):
    figure = getattr(large_res.plot, kind)()
    figure.canvas.draw()
    ax = figure.axes[0]
    ticks = [t for t in ax.get_yticklabels() if t.get_text()]
    assert len(ticks) <= 40
    box = figure.bbox
    for text in _drawn_texts(figure):
        extent = text.get_window_extent()
        assert (
            extent.x0 >= box.x0 - 1
            and extent.y0 >= box.y0 - 1
            and extent.x1 <= box.x1 + 1
            and extent.y1 <= box.y1 + 1
        ), (kind, text.get_text(), extent)
    # labels do not overlap one another
    extents = sorted((t.get_window_extent() for t in ticks), key=lambda e: e.y0)
    assert all(upper.y0 >= lower.y1 - 1 for lower, upper in zip(extents, extents[1:]))


def test_many_candidates_are_aggregated_and_abbreviated():
    res = _many_blocks(8)
    figure = plot_weights(res, include_zero=True, max_candidates=10)
    ax = figure.axes[0]
    labels = _ticks(ax)
    assert labels[-1] == f"+ {len(res.weights) - 10} others"
    widths = _bar_heights(ax)
    ordered = res.weights.sort_values(ascending=False, kind="stable")
    np.testing.assert_allclose(widths[:-1], ordered.head(10).to_numpy())
    assert widths[-1] == pytest.approx(ordered.iloc[10:].sum())
    # long labels become letters with a key: the first candidate's blocks spelled out again
    key = {entry.get_text().split(": ")[0]: entry.get_text().split(": ")[1]
           for entry in figure.legends[0].get_texts()}
    assert "+".join(key[code] for code in labels[0].split("+")) == ordered.index[0]
    risk_ax = plot_cv_risk(res).axes[0]
    assert _ticks(risk_ax)[-1] == f"+ {len(res.weights) - 25} others"


def test_figures_display_inline_without_pyplot(res):
    from IPython.core.formatters import DisplayFormatter

    figure = res.plot.weights()
    assert isinstance(figure, PearlFigure) and isinstance(res.plot, PlotAccessor)
    data, _ = DisplayFormatter().format(figure)
    assert data["image/png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert "PlotAccessor" in repr(res.plot)


@pytest.mark.parametrize("kind", ["weights", "cv_risk", "weight_stability"])
def test_labels_with_dollar_signs_are_drawn_as_written(kind):
    # Two "$" in one label made matplotlib set the text between them as mathematics.
    rng = np.random.default_rng(2)
    block = pd.DataFrame(rng.normal(size=(60, 2)), columns=["price $", "cost $"])
    data = pd.DataFrame({"y": block.sum(axis=1) + rng.normal(size=60)})
    res = pearl.fit("y ~ block(a)", data, blocks={"a": block}, candidates="columns", seed=0,
                    honest=False)
    assert "a[price $]+a[cost $]" in res.weights.index
    figure = getattr(res.plot, kind)()
    _png(figure)
    ticks = [t for t in figure.axes[0].get_yticklabels() if t.get_text()]
    # matplotlib draws "\$" as "$" and never starts mathematics at it
    assert ticks and all(t.get_text().count("$") == t.get_text().count(r"\$") for t in ticks)
    shown = {t.get_text().replace(r"\$", "$") for t in ticks}
    assert "a[price $]+a[cost $]" in shown
