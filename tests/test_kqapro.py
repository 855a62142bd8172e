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
from tests.support.kqapro import FIXTURES, VAL, fixture_kb
from tests.support.llm_server import ToolCallReply


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    return fixture_kb(tmp_path_factory.mktemp("kqapro"))


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
