"""Formula parsing and covariate designs."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import patsy
import pytest

from pearlstats.design.formula import build_covariates, parse_formula, response_values
from pearlstats.exceptions import DataError, FormulaError, MissingValueError


def test_blocks_are_found_in_formula_order_and_kept_out_of_covariates():
    spec = parse_formula("y ~ block(kpca_rbf) + x + C(g) + block('pca')")
    assert spec.block_names == ("kpca_rbf", "pca")
    covariate_codes = [f.code for t in spec.covariate_desc.rhs_termlist for f in t.factors]
    assert covariate_codes == ["x", "C(g)"]


@pytest.mark.parametrize(
    "formula, fragment",
    [
        ("y ~ x", "no block(name) term"),
        ("~ block(a)", "exactly one response"),
        ("y ~ block(a):x", "must stand alone"),
        ("y ~ np.log(block(a))", "must stand alone"),
        ('y ~ block(a) + block("a")', "appears twice"),
        ("y ~ block(a, b)", "exactly one block name"),
        ("y ~ block(1)", "bare name or a string"),
        ("y ~ (", "cannot parse"),
    ],
)
def test_bad_formulas_name_the_problem(formula, fragment):
    with pytest.raises(FormulaError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        parse_formula(formula)


def test_covariates_equal_patsy_dmatrix_of_the_same_terms():
    frame = pd.DataFrame({"y": [1.0, 2, 3, 4, 5], "x": [0.5, 1, 2, 3, 9], "g": list("abcab")})
    spec = parse_formula("y ~ x + C(g) + np.log(x) + block(a)")
    design, matrix = build_covariates(spec, frame, patsy.EvalEnvironment.capture())
    expected = patsy.dmatrix("x + C(g) + np.log(x)", frame)
    np.testing.assert_array_equal(matrix, np.asarray(expected))
    assert design.names == expected.design_info.column_names
    assert set(design.row_variables) == {"g", "x"}


def test_new_rows_reuse_training_levels_and_reject_unseen_ones():
    frame = pd.DataFrame({"y": [1.0, 2, 3, 4], "g": list("abab")})
    spec = parse_formula("y ~ C(g) + block(a)")
    design, _ = build_covariates(spec, frame, patsy.EvalEnvironment.capture())
    np.testing.assert_array_equal(design.matrix(pd.DataFrame({"g": ["b", "a"]})), [[1, 1], [1, 0]])
    with pytest.raises(DataError, match="cannot build"):
        design.matrix(pd.DataFrame({"g": ["c"]}))


def test_new_rows_missing_a_covariate_do_not_fall_back_to_the_namespace():
    x = np.arange(4.0)  # a variable named like the column, in the captured namespace  # noqa: F841
    frame = pd.DataFrame({"y": [1.0, 2, 3, 4], "x": [1.0, 2, 3, 5]})
    spec = parse_formula("y ~ x + block(a)")
    design, _ = build_covariates(spec, frame, patsy.EvalEnvironment.capture())
    with pytest.raises(DataError, match=r"lack the column\(s\) \['x'\]"):
        design.matrix(pd.DataFrame({"z": [1.0]}))


def test_missing_values_are_reported_with_positions():
    frame = pd.DataFrame({"y": [1.0, np.nan, 3, 4], "x": [1.0, 2, np.inf, 5]})
    spec = parse_formula("y ~ x + block(a)")
    with pytest.raises(MissingValueError, match=r"covariate 'x'.*row 2"):
        build_covariates(spec, frame, patsy.EvalEnvironment.capture())
    with pytest.raises(MissingValueError, match=r"response 'y'.*row 1"):
        response_values(spec, frame, patsy.EvalEnvironment.capture())


def test_response_expression_and_missing_response_column():
    frame = pd.DataFrame({"y": [1.0, np.e], "x": [0.0, 1.0]})
    env = patsy.EvalEnvironment.capture()
    np.testing.assert_allclose(
        response_values(parse_formula("np.log(y) ~ block(a)"), frame, env), [0.0, 1.0]
    )
    with pytest.raises(DataError, match="response 'w' is not a column"):
        response_values(parse_formula("w ~ block(a)"), frame, env)


def test_covariate_design_survives_pickling_and_rebuilds_identically():
    frame = pd.DataFrame({"y": np.arange(6.0), "x": [1.0, 2, 3, 4, 5, 7], "g": list("abcabc")})
    spec = parse_formula("y ~ center(x) + C(g) + np.sqrt(x) + block(a)")
    design, _ = build_covariates(spec, frame, patsy.EvalEnvironment.capture())
    restored = pickle.loads(pickle.dumps(design))
    new = pd.DataFrame({"x": [10.0, 0.5], "g": ["c", "a"]})
    np.testing.assert_array_equal(restored.matrix(new), design.matrix(new))


def test_a_response_may_use_patsys_own_functions_as_in_statsmodels():
    # I(), Q() and C() on the left were refused: "refers to ['I'], which is not a column".
    frame = pd.DataFrame({"y": [0.5, 2.0, 3.0, 0.1], "my y": [1.0, 2.0, 3.0, 4.0],
                          "g": ["u", "v", "w", "u"]})
    env = patsy.EvalEnvironment.capture()

    def response(formula):
        return response_values(parse_formula(formula), frame, env)

    assert response("I(y > 1) ~ block(a)").tolist() == [False, True, True, False]
    assert response("I(2 * y) ~ block(a)").tolist() == [1.0, 4.0, 6.0, 0.2]
    assert response("Q('my y') ~ block(a)").tolist() == [1.0, 2.0, 3.0, 4.0]
    assert parse_formula("Q('my y') ~ block(a)").response_variables >= {"my y"}
    assert list(response("C(g, levels=['w', 'v', 'u']) ~ block(a)").cat.categories) == \
        ["w", "v", "u"]
    with pytest.raises(DataError, match=r"'I\(1\)' must be one value per row .* shape \(\)"):
        response("I(1) ~ block(a)")
