"""GERBIL QA's figures, on the cases of GERBIL's own tests and on cases built from its code's rules.

GERBIL is a Java web service that the tests cannot run; its QA code
(``QAMatchingsCounter``, ``FMeasureCalculator``, ``QAUtils``) and the
expectations of its tests (``QAMatchingsCounterTest``,
``QanaryWebServiceFmeasureTest``) are the judge here.
"""

import json
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import gerbil_metric
from harness.gerbil_metric import (Counts, _has_iri_pattern, answer_values, gerbil_scores,
                                   looks_like_iri, measures, qald_measures)
from tests.support.terms import literal


def rows(*terms, var="x"):
    return [{var: term} for term in terms]


def uri(value):
    return {"type": "uri", "value": value}


def kb(n, host="kb.com"):
    return uri(f"http://{host}/{n}")


def as_tuple(counts):
    return counts.true_positives, counts.false_positives, counts.false_negatives


#: QAMatchingsCounterTest's examples: (system answer, gold answer, expected tp, fp, fn).
GERBIL_MATCHING_TEST = [
    ([], [], (0, 0, 0)),
    (rows(kb(1)), [], (0, 1, 0)),
    ([], rows(kb(1)), (0, 0, 1)),
    (rows(kb(1)), rows(kb(1)), (1, 0, 0)),
    (rows(kb(1), kb(2), kb(3)), rows(kb(1), kb(2), kb(3)), (3, 0, 0)),
    (rows(kb(1), kb(2), kb(3)), rows(kb(2), kb(3), kb(1)), (3, 0, 0)),
    (rows(kb(2, "kb.org"), kb(3, "kb.org"), kb(1, "kb.org")), rows(kb(1, "kb.org"), kb(2, "kb.org"), kb(3, "kb.org")),
     (3, 0, 0)),
    (rows(kb(1), kb(2, "ukb.com")), rows(kb(1), kb(2), kb(3)), (1, 1, 2)),
]


@pytest.mark.parametrize("system, gold, expected", GERBIL_MATCHING_TEST)
def test_the_matching_counts_of_gerbils_own_test(system, gold, expected):
    assert as_tuple(gerbil_metric.score(gold, system)) == expected


def test_a_label_where_dbpedia_has_none_is_one_false_positive():
    """GERBIL's last matching case answers ``"Paris"@en`` for dbr:Paris and expects (1, 1, 0) because DBpedia's
    endpoint finds two resources labelled Paris; a label DBpedia does not know counts once, as itself."""
    counts = gerbil_metric.score(rows(uri("http://dbpedia.org/resource/Paris")), rows(literal('"Paris"@en')))
    assert as_tuple(counts) == (0, 1, 1)


def test_the_figures_of_gerbils_qanary_f_measure_test():
    """QanaryWebServiceFmeasureTest: three questions, one right, two wholly wrong."""
    dbr = "http://dbpedia.org/resource/"
    system = [rows(uri(dbr + "Mountain_Time_Zone")), rows(uri(dbr + "Bruce_Peddie")),
              rows(*(uri(dbr + name) for name in ("British_Bull_Dog_revolver", "Enfield_revolver", "Webley_Revolver")))]
    colonies = ("Province_of_South_Carolina", "Chesapeake_Colonies", "New_England_Colonies", "Province_of_Georgia",
                "Colony_of_Virginia", "Middle_Colonies", "Province_of_New_Hampshire", "Province_of_Pennsylvania",
                "Southern_Colonies", "Province_of_Massachusetts_Bay", "Connecticut_Colony", "Delaware_Colony",
                "Province_of_New_Jersey")
    gold = [rows(uri(dbr + "Mountain_Time_Zone")),
            rows(*(uri(dbr + name) for name in ("Santa_María_(ship)", "Pinta_(ship)", "Niña"))),
            rows(*(uri(dbr + name) for name in colonies))]
    scores = gerbil_scores(gerbil_metric.score(g, s) for s, g in zip(system, gold))
    # GERBIL's expected {micro F1, P, R, macro F1, P, R}, written to four places.
    assert [round(value, 4) for value in (scores.micro_f1, scores.micro_precision, scores.micro_recall,
                                          scores.macro_f1, scores.macro_precision, scores.macro_recall)] == [
        0.0909, 0.2, 0.0588, 0.3333, 0.3333, 0.3333]


def test_bare_values_are_compared():
    assert as_tuple(gerbil_metric.score(rows(literal("3", "integer")), rows(literal("3")))) == (1, 0, 0)
    assert as_tuple(gerbil_metric.score(rows(literal("Paris", lang="en")),
                                        rows(literal("Paris", lang="fr")))) == (1, 0, 0)
    assert as_tuple(gerbil_metric.score(rows(literal("100", "integer")), rows(literal("+100", "decimal")))) == (0, 1, 1)


def test_every_column_is_kept():
    with_label = [{"x": kb(1), "xLabel": literal("one", lang="en")}]
    assert as_tuple(gerbil_metric.score(rows(kb(1)), with_label)) == (1, 1, 0)
    assert measures(gerbil_metric.score(rows(kb(1)), with_label))[2] == pytest.approx(2 / 3)
    described = rows(literal("a French poet", lang="en"), var="birthDescription")
    assert answer_values(described) == {"a French poet"}
    assert as_tuple(gerbil_metric.score(described, rows(literal("a French poet")))) == (1, 0, 0)


def test_duplicates_collapse():
    assert as_tuple(gerbil_metric.score(rows(kb(1), kb(1)), rows(kb(1), kb(1), kb(2)))) == (1, 1, 0)


def test_resources_against_a_gold_read_as_strings_match_nothing():
    """A gold with a literal beside an IRI is read as strings; an answer of IRIs only is read as resources,
    and GERBIL compares the two kinds in separate passes."""
    gold = [{"x": kb(1), "n": literal("3", "integer")}]
    assert as_tuple(gerbil_metric.score(gold, rows(kb(1)))) == (0, 1, 2)
    assert as_tuple(gerbil_metric.score(gold, [{"x": kb(1), "n": literal("4")}])) == (1, 1, 1)


def test_booleans_are_the_strings_true_and_false():
    assert answer_values(True) == {"true"} and answer_values(False) == {"false"}
    assert as_tuple(gerbil_metric.score(True, True)) == (1, 0, 0)
    assert as_tuple(gerbil_metric.score(True, False)) == (0, 1, 1)
    assert as_tuple(gerbil_metric.score(True, rows(literal("true", "boolean")))) == (1, 0, 0)
    assert as_tuple(gerbil_metric.score(False, None)) == (0, 0, 1)


def test_what_gerbil_reads_as_a_resource():
    assert looks_like_iri("http://www.wikidata.org/entity/Q42")
    assert looks_like_iri("urn:isbn:0451450523") and looks_like_iri("http://de.wikipedia.org/wiki/Köln")
    for value in ("1979-01-01T00:00:00Z", "12:30", "Paris", "a:b c", "http://x/a b", "mailto:", "3.5", ""):
        assert not looks_like_iri(value), value


GERBIL_IRI_PATTERN = re.compile(r"[^ \t\n\x0b\f\r]+:[^ \t\n\x0b\f\r]+")  # Java's [^\\s]+:[^\\s]+


@given(st.text(alphabet="a:/ \t\né\u00a0", max_size=12))
def test_the_one_pass_test_finds_what_gerbils_pattern_finds(value):
    assert _has_iri_pattern(value) == bool(GERBIL_IRI_PATTERN.search(value))


def test_a_declined_question_is_precision_0_for_gerbils_macro_and_1_for_f1_qald():
    declined = Counts(0, 0, 3)
    assert measures(declined) == (0.0, 0.0, 0.0)
    assert qald_measures(declined) == (1.0, 0.0, 0.0)
    assert measures(Counts(0, 0, 0)) == qald_measures(Counts(0, 0, 0)) == (1.0, 1.0, 1.0)
    assert measures(Counts(0, 2, 0)) == qald_measures(Counts(0, 2, 0)) == (0.0, 0.0, 0.0)


def test_every_answer_declined():
    scores = gerbil_scores([gerbil_metric.score(rows(kb(1)), None), gerbil_metric.score(rows(kb(2), kb(3)), [])])
    assert (scores.macro_precision, scores.micro_precision, scores.macro_recall) == (0.0, 0.0, 0.0)
    assert scores.macro_f1_qald == 0.0  # precision 1 and recall 0 by the QALD rule
    wrong = gerbil_scores([gerbil_metric.score(rows(kb(1)), rows(kb(9)))])
    assert math.isnan(wrong.macro_f1_qald)  # Java's 0.0 / 0.0


def test_macro_f1_qald_is_the_harmonic_mean_of_the_qald_rule_means():
    counts = [Counts(1, 0, 1), Counts(0, 0, 1), Counts(1, 1, 0)]  # QALD rule: P 1, 1, .5; R .5, 0, 1
    scores = gerbil_scores(counts)
    precision, recall = 2.5 / 3, 1.5 / 3
    assert scores.macro_f1_qald == pytest.approx(2 * precision * recall / (precision + recall))
    assert scores.macro_precision == pytest.approx(1.5 / 3)  # the declined question is 0 here
    assert scores.macro_f1 == pytest.approx((2 / 3 + 0 + 2 / 3) / 3)
    assert (scores.micro_precision, scores.micro_recall) == (pytest.approx(2 / 3), pytest.approx(2 / 4))
    with pytest.raises(ValueError, match="no questions"):
        gerbil_scores([])


def test_the_upstream_qald10_outputs(shared_dir):
    """The figures the README quotes for the paper's 387 QALD-10 answers against the gold upstream fetched."""
    outputs = json.loads((shared_dir / "reference-outputs" / "qald10_spinach_output_test.json").read_text())
    scores = gerbil_scores(gerbil_metric.score(o["gold_answer_tuple"], o["predicted_answer_tuple"]) for o in outputs)
    assert [round(100 * value, 2) for value in (scores.macro_f1_qald, scores.macro_precision, scores.macro_recall,
                                                scores.macro_f1, scores.micro_f1)] == [
        64.35, 55.29, 72.87, 59.47, 37.16]
