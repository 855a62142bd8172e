"""Know before use: which IDs a query names, which the run has shown, and the note that names the rest."""

from agent.grounding import naming_note, query_ids, shown_ids, split_note, unseen_ids
from agent.kb.base import SearchHit
from agent.trace import Named


def test_only_wikidata_terms_are_ids_not_strings_comments_or_other_namespaces():
    query = '''PREFIX ex: <http://example.org/>
SELECT ?x WHERE {
  ?x wdt:P31/wdt:P279* wd:Q515 ; p:P1082 ?s .     # wd:Q99 in a comment
  ?s ps:P1082 ?n ; pq:P585 ?t .
  ?x <http://www.wikidata.org/prop/direct/P17> <http://www.wikidata.org/entity/Q183> .
  ?x rdfs:label "wd:Q42 Q42" . ?x ex:Q7 ?y . ?x wdt:P31 wd:L7-F1 .
}'''
    assert query_ids(query) == ["P31", "P279", "Q515", "P1082", "P585", "P17", "Q183", "L7-F1"]


def test_an_id_is_shown_once_any_observation_holds_it_as_a_word():
    shown = shown_ids(["Leonhard Euler (Q7604): Swiss mathematician", "advisor\nQ124500\n(1 row)"])
    assert shown == {"Q7604", "Q124500"}
    assert shown_ids(["Q76040 and XQ7604 and Q7604-ish"]) == {"Q76040"}
    assert unseen_ids("SELECT ?a WHERE { wd:Q7604 wdt:P184 ?a }", shown) == ["P184"]


def test_the_note_names_each_id_and_says_which_do_not_exist():
    ids = ["Q7605", "P184", "Q999999", "Q7604"]
    hits = [SearchHit("Q7605", "Euler (crater)", "lunar crater"),
            SearchHit("P184", "doctoral advisor", "person who supervised the doctorate", "wikibase-item"),
            SearchHit("Q7604", "Leonhard Euler", "x" * 300)]
    note = naming_note(ids, hits)
    assert note.startswith("IDs new to this run (check them): Q7605 = Euler (crater) — lunar "
                           "crater; P184 = doctoral advisor [wikibase-item]; Q999999 does not exist; "
                           "Q7604 = Leonhard Euler — xxx")
    assert note.endswith("x….") and len(note) < 300
    # An old step shows the labels alone.
    assert naming_note(ids, [Named.of(hit) for hit in hits], labels_only=True) == (
        "IDs new to this run (check them): Q7605 = Euler (crater); P184 = doctoral advisor; Q999999 does not exist; "
        "Q7604 = Leonhard Euler.")
    observation = "advisor\nQ1\n(1 row)\n" + note
    assert split_note(observation) == ("advisor\nQ1\n(1 row)", note)
    assert split_note("advisor\nQ1\n(1 row)") == ("advisor\nQ1\n(1 row)", "")
