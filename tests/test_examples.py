"""The example store and its retriever, on real SQLite (FTS5) and a real local knowledge base.

What a user notices: a question that names a property gets the examples that use it, even when another example
shares more of its words; an example from the question's own thread is never shown; the shortened examples stay
within the prompt's share; a repost of an old request is recognised and a merely similar one is not.
"""

from pathlib import Path

import pytest
from hypothesis import example as also_try, given, settings
from hypothesis import strategies as st

from agent.examples import ExampleStore, Retriever, SolvedExample, ThreadRef, prompt_examples
from agent.examples.naming import name_properties
from agent.examples.queries import compact_query, query_properties
from agent.examples.retrieval import EXAMPLE_FRAME, PROMPT_CHARS
from agent.kb.live import LiveWikidata, WikidataConfig
from agent.kb.local import LocalKB
from agent.sparql_lexer import tokenize
from tests.support.wikidata_server import server_error

ADVISORS = "SELECT ?advisor ?advisorLabel WHERE { wd:Q7251 wdt:P184 ?advisor . }"
STUDENTS = "SELECT ?student WHERE { wd:Q7604 wdt:P185 ?student . }"
BIRTH = "SELECT ?date WHERE { wd:Q7604 wdt:P569 ?date . }"
AWARD = ("SELECT ?film WHERE { ?film wdt:P31 wd:Q11424; p:P166 ?award . ?award ps:P166 wd:Q102427; "
         "pq:P585 ?when . }")


def example(key, question, sparql, heading="", month="", **more):
    return SolvedExample(key=key, question=question, sparql=sparql, source=more.pop("source", "forum"),
                         heading=heading, month=month, **more)


EXAMPLES = [
    example("advisors", "Who supervised the thesis of Alan Turing?", ADVISORS, "Turing's supervisor", "2020-03",
            link="Wikidata:Request a query/Archive/2020/03#Turing's supervisor", date="2020-03-04"),
    example("students", "Which students did Leonhard Euler have, the doctoral ones of Euler?", STUDENTS,
            "Euler students", "2019-05"),
    example("birth", "When was Leonhard Euler born?", BIRTH, "Euler birth", "2021-01"),
    example("award", "Films that won the Academy Award for Best Picture, and the year", AWARD),
]
#: Other requests, so that words like "who" and "the" are as common as they are on the forum.
FILLERS = [example(f"filler-{number}", question, f"SELECT ?x WHERE {{ ?x wdt:P{number + 1000} ?y . }}")
           for number, question in enumerate([
               "Who painted the Mona Lisa?", "Who wrote the play Hamlet?", "Who founded the company Wikipedia?",
               "Which rivers flow through the city of Paris?", "Who is the mayor of the city of Berlin?",
               "What is the population of the country of Chile?", "Who were the members of the band Queen?",
               "Which mountains are higher than the Mont Blanc?", "Who directed the film Metropolis?",
               "What are the official languages of the country of Belgium?"])]
NAMES = {"P184": ["doctoral advisor", "supervisor"], "P185": ["doctoral student"], "P569": ["date of birth"],
         "P166": ["award received"], "P585": ["point in time", "year"]}


@pytest.fixture
def store(tmp_path):
    opened = ExampleStore(tmp_path / "examples.sqlite")
    opened.add(EXAMPLES + FILLERS)
    opened.add_property_names(opened.unnamed_properties(), NAMES)
    yield opened
    opened.close()


def keys(matches):
    return [match.example.key for match in matches]


# -- the queries -------------------------------------------------------------------------------------

def test_properties_are_read_from_the_querys_tokens_not_its_comments_or_strings():
    query = ('SELECT ?x WHERE { ?x <http://www.wikidata.org/prop/direct/P57> ?y ; p:P39 ?s . ?s pq:P580 ?t .\n'
             '  # wdt:P999 in a comment\n  FILTER(?t != "wdt:P998") }')
    assert query_properties(query) == {"P57", "P39", "P580"}


def test_a_compact_query_keeps_the_pattern_and_drops_what_the_service_adds():
    query = ("PREFIX wd: <http://www.wikidata.org/entity/>\n# films of a director\n"
             "SELECT DISTINCT ?film ?filmLabel WHERE {\n  ?film wdt:P31 wd:Q11424 ;   # a film\n"
             "        <http://www.wikidata.org/prop/direct/P57> wd:Q8877 .\n"
             '  SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en". }\n'
             "} ORDER BY ?filmLabel")
    assert compact_query(query, 500) == "{?a wdt:P31 wd:Q11424;wdt:P57 wd:Q8877.}ORDER BY ?b"
    counting = "SELECT (COUNT(?x) AS ?n) WHERE { ?x wdt:P31 wd:Q5 . }"
    assert compact_query(counting, 500).startswith("SELECT(COUNT(?a)AS ?b)")  # an aggregate keeps its projection


@given(st.text(alphabet='?xy "{}.;wdt:P57Q5 FILTER()\n#', max_size=120), st.integers(min_value=1, max_value=80))
@also_try('55"5\n"', 4)  # an unclosed quote: shrinking the newline to a space would make a string of it
@settings(max_examples=300, deadline=None)
def test_a_compact_query_stays_within_its_limit_and_is_cut_between_tokens(query, limit):
    whole = compact_query(query, 10**6)
    short = compact_query(query, limit)
    assert len(short) <= limit or short == "…"
    if short != whole:
        kept = short.removesuffix("…")
        assert whole.startswith(kept)
        boundaries = {0}
        for token in tokenize(whole):
            boundaries.add(token.start + len(token.text))
        assert len(kept) in boundaries or whole[len(kept)] == " "


def test_a_long_string_is_never_cut_in_the_middle():
    query = 'SELECT ?x WHERE { ?x rdfs:label "' + "a" * 200 + '"@en ; wdt:P31 wd:Q5 . }'
    short = compact_query(query, 60)
    assert short.endswith("…") and '"' not in short


# -- the store ---------------------------------------------------------------------------------------

def test_adding_the_same_examples_again_changes_nothing_and_an_edit_updates_the_index(store):
    again = store.add(EXAMPLES)
    assert (again.added, again.updated, again.unchanged) == (0, 0, len(EXAMPLES))
    assert store.count() == len(EXAMPLES + FILLERS)
    edited = example("birth", "In which year did Leonhard Euler die?", BIRTH.replace("P569", "P570"),
                     "Euler birth", "2021-01")
    assert store.add([edited]).updated == 1
    [found] = store.examples(store.ids_with_questions(["in which YEAR did leonhard euler die?"]))
    assert found.sparql.endswith("wdt:P570 ?date . }") and store.count() == len(EXAMPLES + FILLERS)
    assert "P570" in store.unnamed_properties()


def test_a_file_that_is_no_store_and_a_missing_store_are_clear_errors(tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("not a database, just notes\n" * 100)
    with pytest.raises(ValueError, match="is not an example store"):
        ExampleStore(other)
    with pytest.raises(ValueError, match="is not an example store"):
        ExampleStore(other, read_only=True)
    with pytest.raises(FileNotFoundError, match="spinach-examples build"):
        ExampleStore(tmp_path / "missing.sqlite", read_only=True)


def test_corrections_are_listed_newest_first(store):
    store.add([example("fix-1", "Who advised Turing?", ADVISORS, "Turing", "2024-01", source="correction",
                       date="2024-01-05", bot_sparql=STUDENTS, author="Alice"),
               example("fix-2", "Euler's birth", BIRTH, "Euler", "2024-02", source="correction",
                       date="2024-02-07", bot_sparql=STUDENTS, author="Bob")])
    assert [(found.author, found.bot_sparql) for found in store.corrections()] == [("Bob", STUDENTS),
                                                                                   ("Alice", STUDENTS)]


# -- the retriever -----------------------------------------------------------------------------------

def test_a_named_property_wins_over_shared_words(store):
    question = "Who were the doctoral advisors of Leonhard Euler?"
    ours = Retriever(store)
    assert ours.named_properties(question) == {"P184": "doctoral advisor"}  # "advisors" read as "advisor"
    assert keys(ours.similar(question, 1)) == ["advisors"]
    # Plain BM25 prefers the example sharing "Leonhard Euler" and "doctoral".
    assert keys(Retriever(store, use_properties=False).similar(question, 1)) == ["students"]


def test_the_longest_name_is_read_first_and_each_word_once(store):
    named = Retriever(store).named_properties("Which films got an award received in the year 1995?")
    assert named == {"P166": "award received", "P585": "year"}


def test_an_example_from_the_questions_own_thread_is_never_returned(store):
    retriever = Retriever(store)
    question = "Who were the doctoral advisors of Alan Turing?"
    assert "advisors" in keys(retriever.similar(question, 4))
    # The bot: the thread was started in February, its archive month is that one or later.
    assert "advisors" not in keys(retriever.similar(question, 4, ThreadRef("Turing's  supervisor", "2020-02")))
    # The evaluation: the exact archive month; another month is another thread.
    assert "advisors" not in keys(retriever.similar(question, 4, ThreadRef("turing's supervisor", "2020-03",
                                                                           "2020-03")))
    assert "advisors" in keys(retriever.similar(question, 4, ThreadRef("Turing's supervisor", "2020-04")))
    excluded = Retriever(store, excluded=frozenset(store.ids_in_threads([ThreadRef("Turing's supervisor",
                                                                                   "2020-03", "2020-03")])))
    assert "advisors" not in keys(excluded.similar(question, 4))


def test_one_example_per_thread_and_every_named_property_shown(tmp_path):
    store = ExampleStore(tmp_path / "examples.sqlite")
    store.add(EXAMPLES + FILLERS + [example("advisors-2", "Who supervised the thesis of Alan Turing? (another query)",
                                  ADVISORS.replace("?advisor", "?a"), "Turing's supervisor", "2020-03")])
    store.add_property_names(store.unnamed_properties(), NAMES)
    matches = Retriever(store).similar("doctoral advisor and date of birth of Alan Turing", 3)
    assert len({(match.example.heading, match.example.month) for match in matches}) == len(matches)
    assert {"advisors", "birth"} <= set(keys(matches)) or {"advisors-2", "birth"} <= set(keys(matches))


def test_shortened_examples_stay_within_the_prompts_share(store):
    matches = Retriever(store).similar("Films awarded Best Picture with the year, and Turing's advisor", 4)
    shown = prompt_examples(matches)
    assert len(shown) == len(matches) == 4
    assert sum(len(item.question) + len(item.query) + len(EXAMPLE_FRAME) for item in shown) <= PROMPT_CHARS
    assert all(item.query.endswith("…") or item.query == compact_query(match.example.sparql, 10**6)
               for item, match in zip(shown, matches))


def test_a_repost_is_the_same_request_and_a_similar_one_is_not(store):
    retriever = Retriever(store)
    [match] = retriever.similar("Who supervised the thesis of Alan Turing", 1)
    assert retriever.same_request("Who supervised the thesis of Alan Turing", match)
    assert retriever.same_request("Alan Turing: who supervised the thesis?", match)
    assert retriever.same_request("Who supervised the thesis of Turing?", match)
    assert not retriever.same_request("Who supervised the thesis of Kurt Gödel?", match)


# -- naming properties from the knowledge base ---------------------------------------------------------

def test_property_names_come_from_the_knowledge_base(tmp_path, store):
    fresh = ExampleStore(tmp_path / "fresh.sqlite")
    fresh.add(EXAMPLES + FILLERS)
    triples = tmp_path / "properties.nt"
    entity, label, alias = ("<http://www.wikidata.org/entity/{}>", "<http://www.w3.org/2000/01/rdf-schema#label>",
                            "<http://www.w3.org/2004/02/skos/core#altLabel>")
    triples.write_text("".join([
        f'{entity.format("P184")} {label} "doctoral advisor"@en .\n',
        f'{entity.format("P184")} {alias} "Doktorvater"@de .\n',
        f'{entity.format("P184")} {alias} "директор"@ru .\n',  # not a language the forum's questions use
        f'{entity.format("P185")} {label} "doctoral student"@en .\n']))
    kb = LocalKB(tmp_path / "kb")
    kb.load([triples], progress=False)
    try:
        report = name_properties(fresh, kb)
    finally:
        kb.close()
    assert report.looked_up == 6 + len(FILLERS) and report.names == 3 and not report.failed
    assert fresh.unnamed_properties() == []  # looked up, with or without names: not asked again
    assert keys(Retriever(fresh).similar("Wer war der Doktorvater von Alan Turing?", 1)) == ["advisors"]


def test_a_knowledge_base_that_fails_leaves_the_names_to_look_up_next_time(tmp_path, wikidata_server):
    failing = wikidata_server(sparql=lambda query: server_error("java.lang.OutOfMemoryError"))
    kb = LiveWikidata(WikidataConfig(api_url=failing.api_url, sparql_url=failing.sparql_url))
    fresh = ExampleStore(Path(tmp_path) / "fresh.sqlite")
    fresh.add(EXAMPLES)
    report = name_properties(fresh, kb)
    assert report.looked_up == 0 and len(report.failed) == 1
    assert fresh.unnamed_properties() == ["P31", "P166", "P184", "P185", "P569", "P585"]
