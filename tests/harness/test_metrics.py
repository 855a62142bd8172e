"""The row-major metric: the paper's definition case by case, the fast path against brute force, upstream's figures."""

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.metrics import exact_match, gold_rows, predicted_rows, recall, row_major_f1


def item(qid):
    return {"type": "uri", "value": f"http://www.wikidata.org/entity/{qid}"}


def text(value, lang=None):
    term = {"type": "literal", "value": value}
    if lang:
        term["xml:lang"] = lang
    return term


def test_extra_predicted_columns_are_free_and_variable_names_ignored():
    gold = [{"person": item("Q1")}]
    predicted = [{"x": item("Q1"), "born": text("1707")}]
    assert row_major_f1(gold, predicted) == 1.0 and exact_match(gold, predicted)


def test_gold_label_and_description_columns_are_ignored():
    gold = [{"p": item("Q1"), "pLabel": text("Euler", "en"), "pDescription": text("mathematician", "en")}]
    assert row_major_f1(gold, [{"p": item("Q1")}]) == 1.0


def test_a_partial_row_counts_its_share_of_values():
    gold = [{"a": item("Q1"), "b": item("Q2")}]
    predicted = [{"a": item("Q1"), "b": item("Q3")}]
    # tp = 0.5, fn = 0 + 0.5, fp = 0
    assert row_major_f1(gold, predicted) == pytest.approx(2 * 0.5 / (2 * 0.5 + 0.5))
    assert not exact_match(gold, predicted)


def test_terms_compare_whole_language_and_datatype_included():
    gold = [{"n": text("Paris", "en")}]
    assert row_major_f1(gold, [{"n": text("Paris", "fr")}]) == 0.0
    assert row_major_f1(gold, [{"n": text("Paris")}]) == 0.0


def test_repeated_values_count_as_a_multiset():
    gold = [{"a": item("Q1"), "b": item("Q1")}]
    assert recall(gold_rows(gold)[0], predicted_rows([{"x": item("Q1")}])[0]) == 0.5
    assert row_major_f1(gold, [{"x": item("Q1"), "y": item("Q1")}]) == 1.0


def test_missing_and_extra_rows():
    gold = [{"x": item("Q1")}, {"x": item("Q2")}]
    assert row_major_f1(gold, [{"x": item("Q1")}]) == pytest.approx(2 / 3)
    assert row_major_f1(gold, [{"x": item("Q1")}, {"x": item("Q2")}, {"x": item("Q3")}]) == pytest.approx(0.8)


def test_duplicate_rows_are_rows():
    gold = [{"x": item("Q1")}]
    assert row_major_f1(gold, [{"x": item("Q1")}, {"x": item("Q1")}]) == pytest.approx(2 / 3)


def test_booleans_score_one_only_when_equal():
    assert row_major_f1(True, True) == 1.0 and exact_match(False, False)
    assert row_major_f1(True, False) == 0.0
    assert row_major_f1(True, [{"x": item("Q1")}]) == 0.0
    assert row_major_f1([{"x": item("Q1")}], True) == 0.0


def test_no_prediction_and_empty_sides():
    gold = [{"x": item("Q1")}]
    assert row_major_f1(gold, None) == 0.0 and not exact_match(gold, None)
    assert row_major_f1(gold, []) == 0.0
    assert row_major_f1([], [{"x": item("Q1")}]) == 0.0
    assert row_major_f1([], []) == 1.0


def test_ties_take_the_assignment_with_fewer_matched_pairs():
    # Recalls: g1-p1 = 1, g1-p2 = 0.5, g2-p1 = 0.5, g2-p2 = 0.  Both (g1-p1) alone and (g1-p2, g2-p1)
    # reach a recall sum of 1; the first matches one pair: tp = 1, fn = 1, fp = 1 (the other would give 2/3).
    gold = [{"a": item("Q1"), "b": item("Q2")}, {"a": item("Q2"), "b": item("Q3")}]
    predicted = [{"a": item("Q1"), "b": item("Q2")}, {"a": item("Q1")}]
    assert row_major_f1(gold, predicted) == pytest.approx(0.5)
    assert row_major_f1(list(reversed(gold)), list(reversed(predicted))) == pytest.approx(0.5)
    # A higher recall sum always wins over more pairs: g1-p1 = 1 alone (tp = 1, fn = 1, fp = 1) beats
    # g1-p2 + g2-p1 = 0.5 + 0.25.
    gold = [{"a": item("Q1"), "b": item("Q2")}, {"a": item("Q2"), "b": item("Q3"), "c": item("Q4"),
                                                   "d": item("Q5")}]
    predicted = [{"a": item("Q1"), "b": item("Q2")}, {"a": item("Q1")}]
    assert row_major_f1(gold, predicted) == pytest.approx(0.5)


def brute_force_f1(predicted, gold):
    """The definition itself: every assignment; highest recall sum, then fewest matched pairs."""
    g, p = gold_rows(gold), predicted_rows(predicted)
    if not g and not p:
        return 1.0
    best = (0.0, 0)  # nothing matched is always possible
    small, large, flip = (g, p, False) if len(g) <= len(p) else (p, g, True)
    for chosen in itertools.permutations(range(len(large)), len(small)):
        total, pairs = 0.0, 0
        for i, j in enumerate(chosen):
            value = recall(large[j], small[i]) if flip else recall(small[i], large[j])
            if value > 0:
                total += value
                pairs += 1
        if (round(total, 9), -pairs) > (round(best[0], 9), -best[1]):
            best = (total, pairs)
    total, pairs = best
    tp, fn, fp = total, len(g) - pairs + (pairs - total), len(p) - pairs
    return 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else 0.0


values = st.sampled_from([item("Q1"), item("Q2"), item("Q3"), text("x"), text("x", "en")])
rows = st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), values, min_size=0, max_size=3),
                min_size=0, max_size=5)
small_rows = st.lists(st.dictionaries(st.sampled_from(["a", "b"]), values, min_size=1, max_size=2), max_size=3)


@settings(max_examples=150, deadline=None)
@given(predicted=rows, gold=rows)
def test_fast_path_equals_the_definition(predicted, gold):
    assert row_major_f1(gold, predicted) == pytest.approx(brute_force_f1(predicted, gold), abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(shared=st.lists(st.dictionaries(st.just("a"), values, min_size=1, max_size=1), max_size=3),
       gold_extra=small_rows, predicted_extra=small_rows)
def test_fast_path_with_identical_rows_equals_the_definition(shared, gold_extra, predicted_extra):
    gold, predicted = shared + gold_extra, predicted_extra + shared
    assert row_major_f1(gold, predicted) == pytest.approx(brute_force_f1(predicted, gold), abs=1e-9)


def test_reproduces_the_upstream_f1_question_by_question(shared_dir):
    runs = json.loads((shared_dir / "reference-outputs" / "qald7_spinach_output_test.json").read_text())
    assert len(runs) == 45
    for run in runs:
        assert row_major_f1(run["gold_answer_tuple"], run["predicted_answer_tuple"]) == pytest.approx(
            run["f1"], abs=1e-9), run["question"]


@settings(max_examples=150, deadline=None)
@given(predicted=rows, gold=rows)
def test_the_sparse_solver_finds_the_same_optimum_as_the_dense_one(predicted, gold):
    from harness.metrics import _solve, _solve_sparse, _weights

    g, p = gold_rows(gold), predicted_rows(predicted)
    if not g or not p:
        return
    _, weights = _weights(g, p)
    if weights.nnz == 0:
        return
    dense_rows, dense_columns = _solve(weights)
    sparse_rows, sparse_columns = _solve_sparse(weights)
    assert weights[sparse_rows, sparse_columns].sum() == weights[dense_rows, dense_columns].sum()
