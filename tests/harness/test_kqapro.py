"""KQA Pro's answers on the fixture: written and judged as KQA Pro does, gold queries against gold answers, and the
agent answering over the KQA Pro profile."""

import json
import shutil

import pytest

from agent import Agent, AgentConfig
from agent.llm import ChatModel, LLMConfig
from harness.datasets import load_dataset
from harness.kqapro import answer_text, choose, number_text, question_type, reasoning, same_answer, validate
from scripts.validate_kqapro import main as validate_main
from tests.support.kqapro import FIXTURES, VAL
from tests.support.llm_server import ToolCallReply


@pytest.fixture(scope="module")
def kb(kqapro_kb):
    """KQA Pro's fixture store (:mod:`tests.support.kqapro`), by the name these tests give it."""
    return kqapro_kb


# -- answers as KQA Pro writes and judges them --------------------------------------------------------

@pytest.mark.parametrize("gold, predicted, same", [
    ("100 metre", "100.0 metre", True), ("1946", "1946-06-14", True), ("1946-06-14", "1946-06-15", False),
    ("2", "2.000001", True), ("2", "3", False), ("yes", "no", False), ("Rome", "rome", False),
    ("0000 0001 0898 6765", "0000 0001 0898 6765", True), ("-2", "-2.5", True),  # its rule drops a negative fraction
])
def test_answers_are_judged_as_kqapro_judges_them(gold, predicted, same):
    assert same_answer(gold, predicted) is same


def test_numbers_lose_their_decimals_as_kqapro_writes_them():
    assert [number_text(v) for v in (643801.0, 1.88, 82675, 2.000001)] == ["643801", "1.88", "82675", "2"]
    assert choose("643801.0 square kilometre", VAL[10]["choices"]) == "643801 square kilometre"
    assert choose("Atlantis", VAL[0]["choices"]) is None


def test_every_question_type_and_reasoning_of_the_paper_is_in_the_fixture():
    examples = load_dataset("kqapro", "val", FIXTURES)
    train = {example.answer for example in load_dataset("kqapro", "train", FIXTURES)}
    assert {question_type(example.functions) for example in examples} == {
        "Query Name", "Count", "Query Attribute", "Query Relation", "Select Between", "Select Among", "Verify",
        "Query Attribute Qualifier", "Query Relation Qualifier"}
    skills = {skill for example in examples for skill in reasoning(example.functions, example.answer, train)}
    assert skills == {"multi-hop", "qualifier", "comparison", "logical", "count", "verify", "zero-shot"}
    assert {example.functions[-1] for example in examples} >= {"VerifyStr", "VerifyNum", "VerifyYear", "VerifyDate"}
    tests = load_dataset("kqapro", "test", FIXTURES)
    assert [example.id for example in tests] == ["0", "1", "2", "3"] and all(e.answer is None for e in tests)
    assert all(len(example.choices) == 10 and example.answer in example.choices for example in examples)


# -- the validity check ---------------------------------------------------------------------------

def test_every_gold_query_of_the_fixture_gives_its_gold_answer(kb):
    for split in ("val", "train"):
        validity = validate(load_dataset("kqapro", split, FIXTURES), kb, progress=False)
        assert (validity.agreed, validity.checked, validity.disagreements) == (
            len(json.loads((FIXTURES / "kqapro" / f"{split}.json").read_text())),) * 2 + ([],)


def test_the_check_finds_a_wrong_answer_a_query_that_fails_and_one_of_many_rows(kb, tmp_path, capsys):
    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "kqapro", data / "kqapro")
    broken = json.loads((data / "kqapro" / "val.json").read_text())
    broken[7]["answer"] = "1.9 metre"  # Will Smith is 1.88 metre tall
    broken[8]["sparql"] = broken[8]["sparql"].replace("WHERE {", "WHERE", 1)
    broken[0]["sparql"] = 'SELECT DISTINCT ?e WHERE { ?e <pred:instance_of> ?c . ?c <pred:name> "city" }'
    (data / "kqapro" / "val.json").write_text(json.dumps(broken))
    assert validate_main(["--kb", str(kb.directory), "--data", str(data), "--quiet"]) == 1
    output = capsys.readouterr().out
    assert output.splitlines()[0] == ("val: 27 of 30 gold queries agree with their gold answer (90.00%): "
                                      "1 not one row, 1 another answer, 1 query failed disagree")
    assert "#7: gold '1.9 metre', query '1.88 metre': How tall is Will Smith?" in output
    assert "#0: gold 'Paris', query '' (4 rows, not one)" in output
    assert "#8: gold '1970-04-26', query '' (query syntax_error: " in output
    assert validate_main(["--kb", str(kb.directory), "--data", str(FIXTURES), "--quiet"]) == 0
    assert "val: 30 of 30 gold queries agree with their gold answer (100.00%)" in capsys.readouterr().out


# -- the agent over the KQA Pro profile ---------------------------------------------------------------

def test_the_agent_answers_over_the_kqapro_profile_through_the_openai_client(llm_server, kb):
    question = VAL[11]  # the Donald Trump whose ISNI is ...
    server = llm_server([
        ToolCallReply("search_wikidata", {"thought": "Which Donald Trump?", "query": "Donald Trump"}),
        ToolCallReply("get_wikidata_entry", {"thought": "The one with that ISNI.", "qid": "<Q22686>"}),
        ToolCallReply("execute_sparql", {"thought": "Ask for his birth date.", "sparql": question["sparql"]}),
        ToolCallReply("stop", {"thought": "Found.", "explanation": "Born 1946-06-14.", "language": "en"}),
    ])
    agent = Agent(ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="t", max_retries=0, timeout=10)),
                  kb, AgentConfig(answer_guaranteed=True))
    result = agent.run(question["question"])
    assert result.stop_reason == "stop"
    search, entry, query = (step.observation for step in result.steps[:3])
    assert "Donald Trump (Q22686): human; date of birth 1946-06-14; ISNI 0000 0001 0898 6765" in search
    assert "Donald Trump (Q1000002): human; date of birth 1970-01-01; ISNI 0000 0000 0000 0001" in search
    assert entry.startswith("Donald Trump (Q22686)") and '"spouse (<spouse>)": {' in entry
    assert query.splitlines()[1] == "1946-06-14 (value node)"
    assert answer_text(result.answer, result.variables, kb) == question["answer"] == "1946-06-14"
    request = server.requests[0]
    assert [tool["function"]["name"] for tool in request["tools"]] == [
        "search_graph", "get_entry", "get_property_examples", "execute_sparql", "stop"]
    assert request["messages"][0]["content"].startswith("Answer with a SPARQL query over the KQA Pro")


# -- a whole run: every option of a run works here too --------------------------------------------------------

def kqapro_script(body):
    """A stand-in model that runs each validation question's gold query, then stops."""
    asked = next(message["content"] for message in body["messages"] if message["role"] == "user")
    question = next(item for item in VAL if asked.startswith(f"Question: {item['question']}"))
    if not any(message["role"] == "tool" for message in body["messages"]):
        return ToolCallReply("execute_sparql", {"thought": "Ask.", "sparql": question["sparql"]})
    return ToolCallReply("stop", {"explanation": "Found.", "language": "en"})


def test_a_run_answers_each_repeat_and_shows_only_kqapro_examples(kb, llm_server, tmp_path, capsys):
    from agent.examples import ExampleStore, SolvedExample
    from scripts.evaluate import main as evaluate_main
    from scripts.report import main as report_main

    examples = tmp_path / "examples.sqlite"
    store = ExampleStore(examples)
    # (A relative IRI such as <capital> reads as a chat template's token, and such a query is never shown.)
    kqapro_query = 'SELECT DISTINCT ?e WHERE { ?e <pred:instance_of> ?c . ?c <pred:name> "city" }'
    store.add([SolvedExample("kqapro train 1", "Which city is the capital of Italy?", kqapro_query, "kqapro train",
                             graph="kqapro"),
               SolvedExample("forum 1", "Which city is the capital of Spain?", "SELECT ?c WHERE { wd:Q29 wdt:P36 ?c }",
                             "forum")])
    store.close()
    server = llm_server(kqapro_script)
    out = tmp_path / "run"
    common = ["--dataset", "kqapro", "--data", str(FIXTURES), "--kb", str(kb.directory), "--base-url",
              server.base_url, "--model", "scripted", "--workers", "1", "--quiet", "--limit", "2"]
    assert evaluate_main([*common, "--out", str(out), "--repeats", "2", "--examples", str(examples)]) == 0
    assert "4 answers (2 questions x 2 repeats): accuracy 100.00 (open)" in capsys.readouterr().out
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((record["id"], record["repeat"]) for record in records) == [
        ("0", 1), ("0", 2), ("1", 1), ("1", 2)]
    first_prompts = [request["messages"][1]["content"] for request in server.requests
                     if len(request["messages"]) == 2]
    shown = '- "Which city is the capital of Italy?" → SELECT DISTINCT ?e WHERE{?e <pred:instance_of> ?c.'
    assert len(first_prompts) == 4 and all(shown in prompt for prompt in first_prompts)
    assert not any("Spain" in prompt for prompt in first_prompts)
    assert report_main(["--kqapro-predictions", str(tmp_path / "r2.txt"), "--repeat", "2", str(out)]) == 0
    assert (tmp_path / "r2.txt").read_text().splitlines()[:2] == ["Paris", "Washington, D.C."]

    # A store with Wikidata's examples only: none is shown, and the run says so once.
    wikidata_only = tmp_path / "wikidata.sqlite"
    store = ExampleStore(wikidata_only)
    store.add([SolvedExample("forum 1", "Which city is the capital of Spain?", "SELECT ?c WHERE { wd:Q29 wdt:P36 ?c }",
                             "forum")])
    store.close()
    asked = len(server.requests)
    assert evaluate_main([*common, "--out", str(tmp_path / "plain"), "--examples", str(wikidata_only)]) == 0
    error = capsys.readouterr().err
    assert error.count("no examples for the graph 'kqapro' (its 1 are for other graphs): none is shown") == 1
    assert not any("Similar solved requests" in request["messages"][1]["content"]
                   for request in server.requests[asked:])


@pytest.mark.parametrize("option, message", [
    (["--numbers", "value"], "error: --numbers compares SPARQL literals; KQA Pro judges answer strings"),
    (["--language", "de"], "error: --language is for QALD-10 and QALD-JSON or TEXT2SPARQL question files; "
                           "kqapro's questions are in English only"),
    (["--offline"], "error: --offline and --cache are for live Wikidata's responses"),
])
def test_an_option_kqapro_cannot_use_is_refused_in_one_line(kb, tmp_path, capsys, option, message):
    from scripts.evaluate import main as evaluate_main

    assert evaluate_main(["--dataset", "kqapro", "--data", str(FIXTURES), "--kb", str(kb.directory), "--out",
                          str(tmp_path / "run"), "--quiet", *option]) == 2
    error = capsys.readouterr().err
    assert error.startswith(message) and error.count("\n") == 1 and not (tmp_path / "run").exists()
