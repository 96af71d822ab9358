"""Every plot renders to PNG (Agg), draws the numbers it claims to draw, and stays readable.

Readability is checked at J = 7, 31 and 255 (3, 5 and 8 tiny blocks, candidates="all"):
a title, at most ~40 tick labels, every drawn text inside the canvas (measured through the
Agg renderer's text extents), every colour named in the legend, every bar's value written.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from figure_checks import (  # noqa: E402
    assert_colours_in_legend,
    assert_inside_canvas,
    assert_titled,
)
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import pearlstats as pearl  # noqa: E402
from pearlstats.plotting import (  # noqa: E402
    PearlFigure,
    PlotAccessor,
    plot_block_importance,
    plot_cv_risk,
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


def _dots(ax) -> dict:
    """Row -> (risk, interval half-width, colour) of the cv_risk dot plot's error bars."""
    rows = {}
    for container in ax.containers:
        line, _, (bars,) = container.lines
        for x, y, segment in zip(line.get_xdata(), line.get_ydata(), bars.get_segments()):
            rows[int(y)] = (x, (segment[1, 0] - segment[0, 0]) / 2, to_rgba(line.get_color()))
    return rows


def test_cv_risk_dots_with_standard_errors(res, paper_data):
    figure = plot_cv_risk(res)
    _png(figure)
    ax = figure.axes[0]
    y = paper_data["frame"]["y"].to_numpy()
    labels = _ticks(ax)
    assert sorted(labels) == sorted(res.candidate_labels)
    losses = (y[:, None] - res.cv_predictions[labels].to_numpy()) ** 2
    dots = _dots(ax)
    assert sorted(dots) == list(range(len(labels)))
    np.testing.assert_allclose([dots[i][0] for i in range(len(labels))], losses.mean(axis=0))
    # intervals span risk +- SE
    np.testing.assert_allclose([dots[i][1] for i in range(len(labels))],
                               losses.std(axis=0, ddof=1) / np.sqrt(len(y)))
    # blue for a non-zero weight, grey for weight 0
    for i, label in enumerate(labels):
        assert (dots[i][2] == to_rgba("C0")) == (res.weights[label] > 0), label
    pearl_line = next(line for line in ax.get_lines() if line.get_label() == "PEARL").get_xdata()[0]
    assert pearl_line == pytest.approx(
        np.mean((y - res.cv_predictions.to_numpy() @ res.weights.to_numpy()) ** 2)
    )
    # a dot plot: the axis spans the risks, it does not start at 0
    low = (losses.mean(axis=0) - losses.std(axis=0, ddof=1) / np.sqrt(len(y))).min()
    assert 0 < ax.get_xlim()[0] <= low
    assert ax.get_xlabel() == "out-of-fold risk: squared error"


def test_block_importance_bars(res):
    figure = plot_block_importance(res)
    _png(figure)
    widths = [patch.get_width() for patch in figure.axes[0].patches]
    expected = [
        res.weights[[lab for lab in res.candidate_labels if name in lab.split("+")]].sum()
        for name in NAMES
    ]
    np.testing.assert_allclose(widths, expected)
    assert figure.axes[0].get_title() == "Block importance"


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
    # the summary's words: fold complements, and their spread is no standard error
    assert ax.get_title() == f"Weights re-solved on {resamples.shape[1]} fold complements"
    assert res.diagnostics["stability_resamples"] in ax.get_title()
    assert "not a standard error" in ax.get_xlabel()
    boot = res.resample_weights("bootstrap", n_resamples=5)
    boot_figure = plot_weight_stability(res, resamples=boot)
    _png(boot_figure)
    assert boot_figure.axes[0].get_title() == "Weights re-solved on 5 bootstrap resamples"


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


@pytest.fixture(scope="module", params=[3, 5, 8], ids=["J7", "J31", "J255"])
def large_res(request):
    return _many_blocks(request.param)


@pytest.mark.parametrize("kind", ["weights", "cv_risk", "block_importance", "weight_stability"])
def test_figures_read_at_a_glance_at_every_size(large_res, kind):
    figure = getattr(large_res.plot, kind)()
    name = f"{kind} at J = {len(large_res.weights)}"
    assert_titled(figure, name)
    assert_inside_canvas(figure, name)
    assert_colours_in_legend(figure, name)
    ax = figure.axes[0]
    ticks = [t for t in ax.get_yticklabels() if t.get_text()]
    assert len(ticks) <= 40
    # labels do not overlap one another
    extents = sorted((t.get_window_extent() for t in ticks), key=lambda e: e.y0)
    assert all(upper.y0 >= lower.y1 - 1 for lower, upper in zip(extents, extents[1:]))
    # no identifiers on the axes
    assert "_" not in ax.get_xlabel() and "(squared)" not in ax.get_xlabel()


@pytest.mark.parametrize("kind", ["weights", "block_importance"])
def test_every_bar_carries_its_value_so_small_weights_are_read(large_res, kind):
    figure = getattr(large_res.plot, kind)()
    figure.canvas.draw()
    ax = figure.axes[0]
    bars = list(ax.patches)
    expected = large_res.weights if kind == "weights" else large_res.block_importance
    smallest = expected[expected > 0].min()
    assert any(bar.get_width() == pytest.approx(smallest) for bar in bars)
    labels = [t for t in ax.texts if t.get_text()]
    assert len(labels) == len(bars)
    for bar in bars:
        row = bar.get_y() + bar.get_height() / 2
        label = min(labels, key=lambda t: abs(ax.transData.inverted().transform(
            t.get_window_extent().get_points().mean(axis=0))[1] - row))
        text = label.get_text()
        value = 0.0 if text == "<0.001" else float(text)
        assert value == pytest.approx(bar.get_width(), abs=5e-4), (kind, text, bar.get_width())
        # the label starts at the end of its bar, inside the axes
        left = ax.transData.inverted().transform(label.get_window_extent().get_points())[0, 0]
        assert left >= bar.get_width() and label.get_window_extent().x1 <= ax.bbox.x1 + 1


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


def test_a_given_axes_keeps_its_own_legend_and_the_block_key_covers_no_data():
    # with ax= and abbreviated labels, the key (drawn by ax.legend) replaced the plot's own
    # legend (PEARL / weight > 0 / weight 0, the box parts, ...) and sat inside the axes
    from matplotlib.legend import Legend

    res = _many_blocks(3)
    figure = PearlFigure(figsize=(12, 8), layout="constrained")  # an Agg canvas: drawn
    axes = figure.subplots(2, 2)
    plot_weights(res, ax=axes[0, 0], include_zero=True, max_candidates=3)
    plot_cv_risk(res, ax=axes[0, 1])
    plot_block_importance(res, ax=axes[1, 0])
    plot_weight_stability(res, ax=axes[1, 1])
    figure.canvas.draw()
    own = {(0, 0): "one candidate", (0, 1): "PEARL", (1, 1): "weight on all rows"}
    for (row, column), entry in own.items():
        ax = axes[row, column]
        legends = [ax.get_legend(), *[a for a in ax.artists if isinstance(a, Legend)]]
        entries = [[text.get_text() for text in legend.get_texts()] for legend in legends]
        assert any(entry in texts for texts in entries), entries
        keys = [legend for legend in legends if legend.get_title().get_text() == "blocks"]
        assert len(keys) == 1 and "A: representation_block_0" in entries[legends.index(keys[0])]
        extent = keys[0].get_window_extent()
        assert not any(extent.overlaps(other.bbox) for other in figure.axes), (entry, extent)
    assert_inside_canvas(figure, "2 x 2 grid")
    assert_colours_in_legend(figure, "2 x 2 grid")


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


def test_block_importance_keeps_every_text_on_the_canvas_with_long_block_names():
    # the J = 255: 8 blocks whose names (42 characters) narrow the axes until their
    # centred x label ran past the canvas's right edge (constrained layout makes room for
    # the tick labels beside the axes, not for a label wider than the axes)
    from figure_checks import drawn_texts

    rng = np.random.default_rng(0)
    names = [f"representation_of_the_inputs_number_{i}_abcd" for i in range(8)]
    blocks = {name: rng.normal(size=(200, 2)) for name in names}
    y = sum(0.5 * block[:, 0] for block in blocks.values()) + rng.normal(size=200)
    res = pearl.fit("y ~ " + " + ".join(f"block({name})" for name in names), {"y": y},
                    blocks=blocks, seed=0, honest=False)
    assert len(res.weights) == 255
    figure = res.plot.block_importance()
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    box = figure.bbox
    texts = drawn_texts(figure)  # every visible text, tick labels of the ticks in view
    assert {"Block importance", "total weight of the candidates that use the block"} <= {
        t.get_text() for t in texts} and set(names) <= {t.get_text() for t in texts}
    for text in texts:
        extent = text.get_window_extent(renderer)
        # a pixel of slack: extents are rounded to whole pixels
        assert (box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1
                and box.y0 - 1 <= extent.y0 and extent.y1 <= box.y1 + 1), (text.get_text(),
                                                                            extent, box)
    # a figure drawn on a given axes keeps that axes' figure as it is
    given = Figure(figsize=(6.4, 4))
    plot_block_importance(res, ax=given.subplots())
    assert tuple(given.get_size_inches()) == (6.4, 4.0)


@pytest.mark.parametrize("kind", ["weights", "cv_risk", "weight_stability"])
@pytest.mark.parametrize("value", [2.5, True, 0, -1, "3", None])
def test_max_candidates_must_be_a_positive_int(res, kind, value):
    # 2.5 and True were pandas TypeErrors (or, in cv_risk, one row); -1 drew all but the last
    with pytest.raises(pearl.OptionError, match=rf"max_candidates={value!r}; use an int >= 1"):
        getattr(res.plot, kind)(max_candidates=value)


@pytest.mark.parametrize("kind", ["weights", "cv_risk", "weight_stability"])
def test_max_candidates_may_be_a_numpy_integer(res, kind):
    ticks = _ticks(getattr(res.plot, kind)(max_candidates=np.int64(1)).axes[0])
    assert ticks == _ticks(getattr(res.plot, kind)(max_candidates=1).axes[0]) and ticks


def test_include_zero_must_be_a_bool(res):
    # "no" is truthy: it drew the zero weights
    with pytest.raises(pearl.OptionError, match=r"include_zero='no'; use True or False"):
        res.plot.weights(include_zero="no")
    assert res.plot.weights(include_zero=np.True_).axes[0].get_title().startswith("PEARL")


def test_weight_stability_refuses_what_is_not_resampled_weights(res):
    # res.weight_uncertainty()'s five summary columns were drawn as five resamples
    summary = res.weight_uncertainty(n_resamples=3, progress=False)
    with pytest.raises(pearl.OptionError, match=r"resamples= is a weight_uncertainty\(\) summary "
                       r"\(columns \['weight', 'mean', 'spread', 'q_lower', 'q_upper'\]\), not "
                       r"resampled weights; pass .*res.resample_weights\('bootstrap'"):
        res.plot.weight_stability(resamples=summary)
    frame = res.resample_weights("bootstrap", 4, seed=0)
    for wrong, what in [(frame.to_numpy(), "is a ndarray"),
                        (frame.rename(index={frame.index[0]: "zz"}), r"rows \['zz'\]"),
                        (frame * 2, r"holds values that are not weights in \[0, 1\]"),
                        (frame.iloc[:, :0], "no columns")]:
        with pytest.raises(pearl.OptionError, match=f"^resamples= (has )?{what}"):
            res.plot.weight_stability(resamples=wrong)
    drawn = res.plot.weight_stability(resamples=frame)
    assert drawn.axes[0].get_title() == "Weights re-solved on 4 bootstrap resamples"
