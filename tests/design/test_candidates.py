"""Candidate generators."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pearlstats.design.candidates import build_candidates, candidate_block_sets
from pearlstats.exceptions import CandidateError

NAMES = ["pca", "kpca_rbf", "kpca_poly"]


def test_all_is_every_nonempty_subset_in_formula_order():
    sets = candidate_block_sets("all", NAMES)
    assert len(sets) == 2 ** len(NAMES) - 1
    expected = {frozenset(c) for r in range(1, 4) for c in itertools.combinations(NAMES, r)}
    assert {frozenset(s) for s in sets} == expected
    for s in sets:
        assert list(s) == sorted(s, key=NAMES.index)


def test_single_and_nested():
    assert candidate_block_sets("single", NAMES) == [("pca",), ("kpca_rbf",), ("kpca_poly",)]
    assert candidate_block_sets("nested", NAMES) == [
        ("pca",),
        ("pca", "kpca_rbf"),
        ("pca", "kpca_rbf", "kpca_poly"),
    ]


def test_explicit_sets_are_reordered_to_formula_order_and_validated():
    assert candidate_block_sets([("kpca_poly", "pca"), "kpca_rbf"], NAMES) == [
        ("pca", "kpca_poly"),
        ("kpca_rbf",),
    ]
    with pytest.raises(CandidateError, match=r"block\(s\) \['tfidf'\]"):
        candidate_block_sets([("pca", "tfidf")], NAMES)
    with pytest.raises(CandidateError, match="listed twice"):
        candidate_block_sets(["pca+kpca_rbf", ("kpca_rbf", "pca")], NAMES)
    with pytest.raises(CandidateError, match="unknown candidates='every'"):
        candidate_block_sets("every", NAMES)


def test_max_candidates_guard():
    with pytest.raises(CandidateError, match="7 candidates, more than max_candidates=5"):
        candidate_block_sets("all", NAMES, max_candidates=5)


def test_columns_of_candidates_and_fusion_column_subsets():
    slices = {"a": slice(2, 4), "b": slice(4, 5)}
    names = ["Intercept", "x", "a[0]", "a[1]", "b"]
    cands = build_candidates("all", slices, names, 2)
    assert [c.label for c in cands] == ["a", "b", "a+b"]
    np.testing.assert_array_equal(cands[2].columns, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(cands[1].columns, [0, 1, 4])
    cols = build_candidates("columns", slices, names, 2)
    assert len(cols) == 2**3 - 1
    assert {c.label for c in cols} >= {"a[0]", "a[0]+b", "a[0]+a[1]+b"}
    assert next(c for c in cols if c.label == "a[1]+b").blocks == ("a", "b")
