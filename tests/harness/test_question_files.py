"""Questions read from a file given on the command line: QALD-JSON, TEXT2SPARQL's YAML, KQA Pro's and SPINACH's JSON."""

import json

import pytest

from harness.datasets import DatasetError
from harness.question_files import read_question_file

QUERY = "SELECT ?x WHERE { ?x a <http://example.org/C> }"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_text2sparql_yaml_in_the_language_asked(tmp_path):
    path = write(tmp_path, "mine.yml", "dataset:\n  id: https://example.org/mine/\nquestions:\n"
                 "  - id: 7\n    question:\n      en: Which C?\n      de: Welche C?\n"
                 f"    query:\n      sparql: |\n        {QUERY}\n"
                 "  - id: 8\n    question:\n      en: Only English?\n"
                 f"    query:\n      sparql: {QUERY}\n")
    kind, loaded = read_question_file(path, "de")
    assert kind == "text2sparql" and loaded.without_language == ["8"]
    [example] = loaded.examples
    assert (example.id, example.question, example.gold_sparql.strip(), example.gold_answer, example.source,
            example.split) == ("7", "Welche C?", QUERY, None, "mine", "file")
    assert loaded.dataset_id == "https://example.org/mine/"


def test_qald_json_keeps_its_gold_answers(tmp_path):
    path = write(tmp_path, "qald.json", json.dumps({"questions": [{
        "id": "1", "question": [{"language": "en", "string": "Is it?"}], "query": {"sparql": "ASK {}"},
        "answers": [{"head": {}, "boolean": True}]}]}))
    kind, loaded = read_question_file(path)
    assert kind == "qald-json" and loaded.examples[0].gold_answer is True
    assert loaded.dataset_id == ""  # none declared: an export names it by the file


def test_kqapro_and_spinach_lists(tmp_path):
    kind, loaded = read_question_file(write(tmp_path, "val.json", json.dumps([
        {"question": "How tall?", "choices": ["1", "2"], "answer": "2", "sparql": QUERY, "program": []}])))
    assert kind == "kqapro" and (loaded.examples[0].id, loaded.examples[0].answer) == ("0", "2")
    kind, loaded = read_question_file(write(tmp_path, "dev.json", json.dumps([
        {"id": "a", "question": "Which?", "sparql": QUERY}])))
    assert kind == "spinach" and loaded.examples[0].question == "Which?"


@pytest.mark.parametrize("name, text, message", [
    ("x.json", '{"items": []}', "not a question file this harness reads"),
    ("x.json", "[1, 2", "is not valid JSON"),
    ("x.yml", "questions: [\n", "is not valid YAML"),
    ("x.yml", "questions:\n  - id: 1\n    question: {en: Why?}\n", "a question lacks a field"),
])
def test_a_bad_file_says_what_is_wrong_with_it(tmp_path, name, text, message):
    with pytest.raises(DatasetError, match=message):
        read_question_file(write(tmp_path, name, text))
    with pytest.raises(DatasetError, match="cannot read"):
        read_question_file(tmp_path / "absent.json")
