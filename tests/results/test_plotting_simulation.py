"""Figures of simulation results: the numbers drawn, n written plainly, σ in titles, ±1 SE."""

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

import pearlstats as pearl  # noqa: E402
from pearlstats.plotting import plot_risk_ratio, plot_simulation  # noqa: E402

SIZES = [100, 200, 400, 800]


def _png(figure) -> None:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    assert buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"


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
        ratios = np.array([[run.loc["PEARL", "MSE"] / run.loc[method, "MSE"]
                            for run in evaluations[n]] for n in (100, 200, 400)])
        line = by_label[method]
        np.testing.assert_allclose(np.asarray(line.get_xdata(), dtype=float), [100, 200, 400])
        np.testing.assert_allclose(np.asarray(line.get_ydata(), dtype=float), ratios.mean(axis=1))
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()] == ["100", "200", "400"]
    assert_titled(figure)
    assert_inside_canvas(figure)
    with pytest.raises(pearl.OptionError, match="accuracy"):
        plot_risk_ratio(evaluations, metric="accuracy")


def test_risk_ratio_names_the_metric_in_words_and_which_side_is_better():
    methods = ["PEARL", "Best"]
    rng = np.random.default_rng(1)
    evaluations = {n: [pd.DataFrame({"cross_entropy": rng.uniform(0.5, 1, 2),
                                     "accuracy": rng.uniform(0.6, 0.9, 2)}, index=methods)
                       for _ in range(3)] for n in (100, 200)}
    ax = plot_risk_ratio(evaluations, metric="cross_entropy").axes[0]
    assert "log-loss" in ax.get_title() and "cross_entropy" not in ax.get_title()
    assert "below 1: PEARL better" in ax.get_ylabel() and "log-loss(PEARL)" in ax.get_ylabel()
    figure = plot_risk_ratio(evaluations, metric="accuracy")
    assert "above 1: PEARL better" in figure.axes[0].get_ylabel()
    assert_inside_canvas(figure)


@pytest.fixture(scope="module")
def table():
    """A long grid table as run_grid writes it: 2 sigmas x 4 n x 7 repetitions x 3 methods."""
    rng = np.random.default_rng(3)
    rows = [
        {"repetition": r, "n": n, "sigma": sigma, "method": method,
         "MSE": sigma + 10 / n + shift + rng.normal(scale=0.05)}
        for sigma in (0.1, 1.5) for n in SIZES for r in range(7)
        for method, shift in (("PEARL", 0.0), ("MS", 0.1), ("Best", 0.2))
    ]
    return pd.DataFrame(rows)


def test_simulation_figure_draws_means_with_standard_error_bands(table):
    figure = plot_simulation(table, methods=["PEARL", "MS", "Best"])
    _png(figure)
    assert len(figure.axes) == 2
    for ax, sigma in zip(figure.axes, (0.1, 1.5)):
        assert ax.get_title() == f"σ = {sigma}"
        # n on the axis as plain numbers, no powers of 2
        assert [t.get_text() for t in ax.get_xticklabels()] == [str(n) for n in SIZES]
        lines = {line.get_label(): line for line in ax.get_lines()}
        bands = [c for c in ax.collections if len(c.get_paths())]
        assert len(bands) == 3
        for band, method in zip(bands, ["PEARL", "MS", "Best"]):
            part = table[(table["sigma"] == sigma) & (table["method"] == method)]
            values = np.array([part.loc[part["n"] == n, "MSE"].to_numpy() for n in SIZES])
            mean = values.mean(axis=1)
            se = values.std(axis=1, ddof=1) / np.sqrt(values.shape[1])
            np.testing.assert_allclose(lines[method].get_ydata(), mean)
            # the band's outline passes through mean - se and mean + se at every n
            vertices = band.get_paths()[0].vertices
            for n, low, high in zip(SIZES, mean - se, mean + se):
                at_n = vertices[np.isclose(vertices[:, 0], n), 1]
                assert np.isclose(at_n, low).any() and np.isclose(at_n, high).any()
    assert "mean of 7 repetitions" in figure._suptitle.get_text()
    assert_titled(figure)
    assert_inside_canvas(figure)
    assert_colours_in_legend(figure)


def test_simulation_figure_of_one_panel_stays_inside_the_canvas(table):
    figure = plot_simulation(table[table["sigma"] == 0.1])
    assert_inside_canvas(figure)
    assert [line.get_label() for line in figure.axes[0].get_lines()] == ["PEARL", "MS", "Best"]


def test_simulation_figure_names_what_is_missing(table):
    with pytest.raises(pearl.DataError, match="sigma"):
        plot_simulation(table.drop(columns="sigma"))
    with pytest.raises(pearl.OptionError, match="Oracle"):
        plot_simulation(table, methods=["PEARL", "Oracle"])


def test_simulation_figure_with_a_row_per_metric(table):
    wide = table.assign(cross_entropy=table["MSE"] / 2)
    figure = plot_simulation(wide, metric=["MSE", "cross_entropy"], panels="sigma",
                             panel_title="noise {value}", title="Two metrics")
    assert len(figure.axes) == 4
    top, bottom = figure.axes[:2], figure.axes[2:]
    assert [ax.get_title() for ax in top] == ["noise 0.1", "noise 1.5"]
    assert top[0].get_ylabel() == "test MSE" and bottom[0].get_ylabel() == "test log-loss"
    lines = {line.get_label(): line for line in bottom[1].get_lines()}
    part = wide[(wide["sigma"] == 1.5) & (wide["method"] == "MS")]
    np.testing.assert_allclose(lines["MS"].get_ydata(),
                               part.groupby("n")["cross_entropy"].mean().to_numpy())
    assert figure._suptitle.get_text().startswith("Two metrics\n")
    assert_inside_canvas(figure)
    assert_colours_in_legend(figure)


def test_named_panels_keep_the_table_order_and_their_own_sizes(table):
    other = table[table["n"] < 800].assign(sigma=0.1, kind="MLP")
    both = pd.concat([table[table["sigma"] == 0.1].assign(kind="multinomial"), other])
    figure = plot_simulation(both, panels="kind", panel_title="{value} candidates")
    assert [ax.get_title() for ax in figure.axes] == ["multinomial candidates", "MLP candidates"]
    assert [t.get_text() for t in figure.axes[1].get_xticklabels()] == ["100", "200", "400"]


def _overlap(one, other) -> bool:
    """Whether two display boxes share more than a pixel each way."""
    return (min(one.x1, other.x1) - max(one.x0, other.x0) > 1
            and min(one.y1, other.y1) - max(one.y0, other.y0) > 1)


@pytest.mark.parametrize("sigmas", [[0.1], [0.1, 1.5]])
def test_simulation_legend_overlaps_neither_the_title_nor_the_panels(table, sigmas):
    # one column of panels: the legend "outside right upper" covered the end of the title
    # ("... against the labeled sample size n") and of its second line
    wide = table[table["sigma"].isin(sigmas)].assign(accuracy=0.8, cross_entropy=0.5)
    figure = plot_simulation(wide, metric=["accuracy", "cross_entropy"])
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    [legend] = [ax.get_legend() for ax in figure.axes if ax.get_legend()] + list(figure.legends)
    box = legend.get_window_extent(renderer)
    title = figure._suptitle.get_window_extent(renderer)
    assert not _overlap(box, title), (box, title)
    for ax in figure.axes:
        assert not _overlap(box, ax.get_window_extent(renderer)), ax.get_title()
        assert not _overlap(box, ax.title.get_window_extent(renderer)), ax.get_title()
    assert [text.get_text() for text in legend.get_texts()] == ["PEARL", "MS", "Best"]
    assert_inside_canvas(figure)
    assert_colours_in_legend(figure)


def test_methods_with_equal_ratios_share_one_line_named_for_both():
    # without covariates Covariates equals Null: its line lay exactly under Null's, unseen,
    # while the legend listed both
    rng = np.random.default_rng(2)
    methods = ["PEARL", "Best", "Covariates", "Null"]
    evaluations = {}
    for n in (60, 120):
        evaluations[n] = []
        for _ in range(3):
            mse = rng.uniform(1, 2, 4)
            mse[3] = mse[2] * (1 + 1e-15 * (n == 60))  # equal, or equal to rounding
            evaluations[n].append(pd.DataFrame({"MSE": mse}, index=methods))
    ax = plot_risk_ratio(evaluations).axes[0]
    assert [container.get_label() for container in ax.containers] == ["Best",
                                                                      "Covariates = Null"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Best", "Covariates = Null"]
