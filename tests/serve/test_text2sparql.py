"""The TEXT2SPARQL API of ``spinach-serve``, judged by the challenge's official client on CK25.

The client asks the server (``ask``), runs the gold queries and the answered
ones on Oxigraph's own server holding CK25 (``query``) and scores them
(``evaluate``); the harness's set-F1 on the same answers gives the same
figures.  The model is scripted per question: most questions get
their reference query, some another question's query, one the model's
judgement that the graph cannot answer it, and for one the model fails.
"""

from __future__ import annotations

import http.client
import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import yaml

from harness import text2sparql_metric
from harness.text2sparql_metric import aggregate
from tests.support.llm_server import ErrorReply, HeldReply, RawReply, SlowReply, ToolCallReply
from tests.support.processes import PATIENCE, wait_for
from serve.__main__ import main as serve_main
from tests.support.serve_rig import (CK25_DATASET, DBPEDIA_DATASET, build_ck25_store, build_fixture_store,
                                     ck25_questions, run_client, start_oxigraph, start_serve)

#: One worker runs them all: they share CK25's store and Oxigraph's server.
pytestmark = pytest.mark.xdist_group("serve-ck25")
#: What the client puts for a query that failed or was never answered.
EMPTY_RESULT = {"head": {"vars": []}, "results": {"bindings": []}}
#: Questions answered with the next question's reference query (a wrong answer).
WRONG = {3, 13, 23, 33, 43}
#: The model judges the graph cannot answer this one.
CANNOT_ANSWER = 7
#: The model fails on every call for this one.
FAILING = 9
#: Seconds the server gives a question in the tests of its answer deadline (``--answer-within``; 150 by default): as
#: short as a question answered at once still surely takes on a busy machine.
ANSWER_WITHIN = 10


def _question_of(body: dict[str, Any]) -> str:
    for message in body["messages"]:
        if message["role"] == "user":
            found = re.search(r"^Question: (.*)$", message["content"], re.MULTILINE)
            if found:
                return found.group(1).strip()
    raise AssertionError("no question in the request")


def scripted_model(questions: list[dict[str, Any]]):
    """Per question: its first call runs a query (or fails, or gives up), its second stops."""
    by_text = {item["question"]["en"].strip(): item for item in questions}
    ids = [item["id"] for item in questions]
    calls: dict[str, int] = {}

    def reply(body: dict[str, Any]):
        text = _question_of(body)
        item = by_text[text]
        calls[text] = calls.get(text, 0) + 1
        if item["id"] == FAILING:
            return ErrorReply(400, "the model failed")
        if item["id"] == CANNOT_ANSWER:
            return ToolCallReply("stop", {"thought": "nothing in the graph says this", "cannot_answer": True,
                                          "explanation": "The graph has no such facts.", "language": "en"})
        if calls[text] == 1:
            source = item
            if item["id"] in WRONG:
                source = next(other for other in questions if other["id"] == ids[(ids.index(item["id"]) + 1)
                                                                                  % len(ids)])
            return ToolCallReply("execute_sparql", {"thought": "run it", "sparql": source["query"]["sparql"]})
        return ToolCallReply("stop", {"thought": "done", "explanation": "The query answers it.", "language": "en"})

    return reply


def endpoint_results(endpoint: str, query: str) -> dict[str, Any]:
    """SPARQL JSON results of *query* on *endpoint*; a query the endpoint refuses is an empty result, as the client
    reads it."""
    request = urllib.request.Request(endpoint + "?" + urllib.parse.urlencode({"query": query}),
                                     headers={"Accept": "application/sparql-results+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)
    except urllib.error.HTTPError:
        return EMPTY_RESULT


def _get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


@pytest.fixture(scope="module")
def ck25(shared_dir, tmp_path_factory):
    questions_path = ck25_questions(shared_dir)
    store = build_ck25_store(shared_dir, tmp_path_factory.mktemp("ck25-store"))
    oxigraph = start_oxigraph(shared_dir, tmp_path_factory.mktemp("ck25-oxigraph"))
    yield questions_path, store, oxigraph
    oxigraph.process.terminate()
    oxigraph.process.wait(timeout=20)


def test_the_official_client_scores_a_scripted_run_on_ck25(ck25, llm_server, text2sparql_client, tmp_path):
    questions_path, store, oxigraph = ck25
    questions = yaml.safe_load(questions_path.read_text())["questions"]
    llm = llm_server(scripted_model(questions))
    service = start_serve(llm.base_url, {"ck25": store}, tmp_path, {CK25_DATASET: "ck25"})
    try:
        asked = run_client(text2sparql_client, "ask", "--answers-db", "responses.db", "-o", "answers.json",
                           "--retries", "0", str(questions_path), service.base + "/text2sparql", cwd=tmp_path)
    finally:
        log = service.stop()
    assert asked.returncode == 0, asked.stderr[-3000:]
    answers = {answer["qname"]: answer for answer in json.loads((tmp_path / "answers.json").read_text())}
    # Every question but the one whose model failed is answered, the one the graph cannot answer with a query
    # that has no solutions; the failed one is a 503 the client skips.
    assert set(answers) == {f"ck25:{item['id']}-en" for item in questions if item["id"] != FAILING}
    assert answers[f"ck25:{CANNOT_ANSWER}-en"]["query"] == "SELECT * WHERE { FILTER(false) }"
    assert "validation error" in asked.stderr
    assert "Traceback" not in log
    assert re.search(r"text2sparql: ck25: llm_error .*" + re.escape(questions[FAILING - 1]["question"]["en"][:40]),
                     log)
    assert "text2sparql: ck25: cannot_answer" in log

    for name, extra in (("true.json", ()), ("pred.json", ("-a", "answers.json"))):
        queried = run_client(text2sparql_client, "query", "-e", oxigraph.endpoint, "-o", name, *extra,
                             str(questions_path), cwd=tmp_path)
        assert queried.returncode == 0, queried.stderr[-3000:]
    evaluated = run_client(text2sparql_client, "evaluate", "-o", "scores.json", "spinach", "true.json", "pred.json",
                           cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    scores = json.loads((tmp_path / "scores.json").read_text())
    # trec_eval leaves out a question whose reference answer is empty (two of CK25's fifty)
    gold = json.loads((tmp_path / "true.json").read_text())
    assert set(scores) - {"average"} == {qname for qname, answers in gold.items() if qname != "order_required"
                                         and answers}
    right = [qname for qname in scores if qname != "average"
             and int(qname[5:-3]) not in WRONG | {CANNOT_ANSWER, FAILING}]
    assert all(scores[qname]["set_F"] == 1.0 for qname in right), {q: scores[q]["set_F"] for q in right}
    assert scores[f"ck25:{FAILING}-en"]["set_F"] == 0.0
    assert scores[f"ck25:{CANNOT_ANSWER}-en"]["set_F"] == 0.0
    assert all(scores[f"ck25:{item}-en"]["set_F"] < 1.0 for item in WRONG)
    print("client's average:", json.dumps(scores["average"]))

    # The harness's set-F1 on the same answers, each query run on the same endpoint: the client's figures.
    ours = {f"ck25:{item['id']}-en": text2sparql_metric.score(
        endpoint_results(oxigraph.endpoint, item["query"]["sparql"]),
        endpoint_results(oxigraph.endpoint, answers[f"ck25:{item['id']}-en"]["query"])
        if f"ck25:{item['id']}-en" in answers else EMPTY_RESULT) for item in questions}
    assert {qname for qname, score in ours.items() if score is not None} == set(scores) - {"average"}
    for qname, score in ours.items():
        if score is not None:
            assert math.isclose(score.f1, scores[qname]["set_F"]), qname
    figure = aggregate(ours.values())
    assert math.isclose(figure.f1, scores["average"]["set_F"])
    assert math.isclose(figure.precision, scores["average"]["set_P"])
    assert math.isclose(figure.recall, scores["average"]["set_recall"])


def test_the_api_answers_as_the_challenge_describes(ck25, llm_server, tmp_path):
    _, store, _ = ck25
    llm = llm_server(lambda body: SlowReply(3, ToolCallReply("stop", {"thought": "slow"})))
    service = start_serve(llm.base_url, {"ck25": store}, tmp_path, {CK25_DATASET: "ck25"},
                          ("--timeout", "1", "--per-client", "1"))
    try:
        api = service.base + "/text2sparql"
        status, body = _get(api + "?" + urllib.parse.urlencode({"dataset": CK25_DATASET}))
        assert status == 422 and body["detail"][0]["loc"] == ["query", "question"]
        status, body = _get(api + "?" + urllib.parse.urlencode({"question": "Who?"}))
        assert status == 422 and body["detail"][0]["loc"] == ["query", "dataset"]
        status, body = _get(api + "?" + urllib.parse.urlencode(
            {"question": "Who?", "dataset": "https://text2sparql.aksw.org/2025/dbpedia/"}))
        assert status == 404 and CK25_DATASET in body["detail"]
        status, body = _get(api + "?" + urllib.parse.urlencode({"question": "Who?\nERROR forged line",
                                                                 "dataset": CK25_DATASET}))
        assert status == 504 and body == {"detail": "no query within 1 s"}
    finally:
        log = service.stop()
    assert "Traceback" not in log
    assert "no query within 1 s: Who? ERROR forged line" in log  # one line: a question cannot forge log lines


def _get_from(base: str, source: str, question: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    """The API's answer to *question* asked from the loopback address *source* (another client)."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60, source_address=(source, 0))
    connection.request("GET", "/text2sparql?" + urllib.parse.urlencode({"question": question,
                                                                        "dataset": CK25_DATASET}))
    response = connection.getresponse()
    body = json.load(response)
    connection.close()
    return response.status, dict(response.headers), body


def test_a_full_queue_and_a_busy_client_are_refused_with_retry_after(ck25, llm_server, tmp_path):
    _, store, _ = ck25
    stop = ToolCallReply("stop", {"thought": "no", "cannot_answer": True, "explanation": "No.", "language": "en"})
    held = HeldReply(stop)  # the first question holds the only worker until the others have been refused
    llm = llm_server(lambda body: held if re.search(r"^Question: first$", body["messages"][1]["content"], re.MULTILINE)
                     else stop)
    service = start_serve(llm.base_url, {"ck25": store}, tmp_path, {CK25_DATASET: "ck25"},
                          ("--workers", "1", "--queue", "1", "--per-client", "1"))
    try:
        with ThreadPoolExecutor(2) as pool:
            running = pool.submit(_get_from, service.base, "127.0.0.1", "first")
            wait_for(held.arrived.is_set, PATIENCE, "the first question reaching the model")
            waiting = pool.submit(_get_from, service.base, "127.0.0.2", "second")
            wait_for(lambda: "queued for 127.0.0.2" in service.log.read_text(), PATIENCE,
                     "the second question being queued")
            busy_client = _get_from(service.base, "127.0.0.1", "third")
            full_queue = _get_from(service.base, "127.0.0.3", "fourth")
            held.release.set()
            answered = [running.result(), waiting.result()]
    finally:
        held.release.set()
        log = service.stop()
    assert busy_client[0] == 429 and busy_client[1]["retry-after"] == "10"
    assert full_queue[0] == 503 and full_queue[1]["retry-after"] == "30"
    assert "as many questions as it can" in full_queue[2]["detail"]
    assert [status for status, _, _ in answered] == [200, 200]
    assert [body["question"] for _, _, body in answered] == ["first", "second"]
    assert "refused (429) for 127.0.0.1" in log and "refused (503) for 127.0.0.3" in log


def test_a_model_answering_200_with_a_web_page_is_a_503_and_one_log_line(ck25, llm_server, tmp_path):
    _, store, _ = ck25
    llm = llm_server(lambda body: RawReply("<html><body><h1>Welcome to nginx!</h1></body></html>"))
    service = start_serve(llm.base_url, {"ck25": store}, tmp_path, {CK25_DATASET: "ck25"})
    try:
        status, body = _get(service.base + "/text2sparql?" + urllib.parse.urlencode(
            {"question": "Who?", "dataset": CK25_DATASET}))
    finally:
        log = service.stop()
    assert status == 503 and body == {"detail": "the language model or the knowledge graph failed; ask again later"}
    assert "Traceback" not in log and "has no attribute" not in log
    [line] = [line for line in log.splitlines() if "llm_error" in line]
    assert "not a chat completion (text): <html><body><h1>Welcome to nginx!" in line


def _get_forwarded(base: str, question: str, forwarded_for: str) -> tuple[int, dict[str, Any]]:
    """The API's answer to *question* asked from this machine with an ``X-Forwarded-For`` header."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    connection.request("GET", "/text2sparql?" + urllib.parse.urlencode({"question": question,
                                                                        "dataset": CK25_DATASET}),
                       headers={"X-Forwarded-For": forwarded_for})
    response = connection.getresponse()
    body = json.load(response)
    connection.close()
    return response.status, body


@pytest.mark.parametrize("trusted", [False, True], ids=["no proxy named", "this machine named as the proxy"])
def test_a_forwarded_address_counts_only_from_a_proxy_the_operator_named(ck25, llm_server, tmp_path, trusted):
    """Any process on the server's machine could otherwise claim many addresses and pass the per-address limit."""
    _, store, _ = ck25
    stop = ToolCallReply("stop", {"thought": "no", "cannot_answer": True, "explanation": "No.", "language": "en"})
    held = HeldReply(stop)
    llm = llm_server(lambda body: held if re.search(r"^Question: first$", body["messages"][1]["content"],
                                                    re.MULTILINE) else stop)
    # Each request's line (--access-log) names the client uvicorn took the request to come from.
    options = ("--workers", "2", "--per-client", "1", "--access-log") + \
        (("--trusted-proxy", "127.0.0.0/8") if trusted else ())
    service = start_serve(llm.base_url, {"ck25": store}, tmp_path, {CK25_DATASET: "ck25"}, options)
    try:
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(_get_forwarded, service.base, "first", "203.0.113.1")
            wait_for(held.arrived.is_set, PATIENCE, "the first question reaching the model")
            second = _get_forwarded(service.base, "second", "203.0.113.2")
            held.release.set()
            assert first.result()[0] == 200
    finally:
        held.release.set()
        log = service.stop()
    if trusted:  # two clients behind the proxy, one question each
        assert second[0] == 200 and "203.0.113.2" in log
    else:  # one client, this machine, with its one question running: the header is not believed
        assert second[0] == 429 and "refused (429) for 127.0.0.1" in log and "203.0.113" not in log


@pytest.mark.parametrize("leaves", ["client goes away", "deadline passes"])
def test_a_run_nobody_waits_for_closes_its_model_request_and_frees_its_worker(ck25, llm_server, tmp_path, leaves):
    _, store, _ = ck25
    stop = ToolCallReply("stop", {"thought": "no", "cannot_answer": True, "explanation": "No.", "language": "en"})
    # The abandoned question's model call is held for good: only closing its request can free the only worker.
    held = HeldReply(ToolCallReply("execute_sparql", {"thought": "look", "sparql": "SELECT * WHERE { ?s ?p ?o }"}))

    def script(body):
        question = re.search(r"^Question: (.*)$", body["messages"][1]["content"], re.MULTILINE).group(1)
        return held if question == "abandoned" else stop

    llm = llm_server(script)
    deadline = leaves == "deadline passes"
    service = start_serve(llm.base_url, {"ck25": store}, tmp_path, {CK25_DATASET: "ck25"},
                          ("--workers", "1") + (("--answer-within", str(ANSWER_WITHIN)) if deadline else ()))
    try:
        if deadline:  # the client waits through the deadline, as the official client does
            abandoned = _get(service.base + "/text2sparql?" + urllib.parse.urlencode(
                {"question": "abandoned", "dataset": CK25_DATASET}))
            assert abandoned == (504, {"detail": f"no query within {ANSWER_WITHIN} s"})
        else:
            host, port = service.base.removeprefix("http://").split(":")
            connection = http.client.HTTPConnection(host, int(port), timeout=60)
            connection.request("GET", "/text2sparql?" + urllib.parse.urlencode({"question": "abandoned",
                                                                                "dataset": CK25_DATASET}))
            wait_for(held.arrived.is_set, PATIENCE, "the abandoned question reaching the model")
            connection.sock.shutdown(2)  # the client goes away without waiting for its answer
            connection.close()
        wait_for(held.closed.is_set, PATIENCE, "the server closing the abandoned question's model request")
        # The held reply is never released: the only worker is free because its model request was closed.
        status, body = _get(service.base + "/text2sparql?" + urllib.parse.urlencode(
            {"question": "next", "dataset": CK25_DATASET}))
        still_held = not held.release.is_set()
    finally:
        held.release.set()
        log = service.stop()
    assert status == 200 and body["question"] == "next" and still_held
    cause = "past its deadline" if deadline else "client gone"
    assert f"run stopped ({cause}; its model request closed): abandoned" in log
    if not deadline:
        assert "the client went away" in log
    abandoned = [request for request in llm.requests if "Question: abandoned" in request["messages"][1]["content"]]
    assert len(abandoned) == 1, "the abandoned run asked the model again"
    assert "Traceback" not in log


#: The organisers' client settings: a 180-s read timeout a question, then up to 5 retries 15 s apart.
ORGANISERS = ("--timeout", "180", "--retries", "5", "--retry-sleep", "15")
#: The DBpedia sample's question, in the challenge's languages for DBpedia, and its query.
DBPEDIA_QUESTION = {"en": "Where was Marie Curie born?", "es": "¿Dónde nació Marie Curie?"}
DBPEDIA_QUERY = ("PREFIX dbo: <http://dbpedia.org/ontology/>\nPREFIX dbr: <http://dbpedia.org/resource/>\n"
                 "SELECT ?place WHERE { dbr:Marie_Curie dbo:birthPlace ?place }")
#: CK25's first question in German (the challenge asks CK25 in English and German).
CK25_GERMAN = "In welcher Abteilung ist Frau Brant?"


def _tool_messages(body: dict[str, Any]) -> int:
    return sum(message["role"] == "tool" for message in body["messages"])


def test_the_official_client_gets_a_query_for_each_language_and_for_a_question_out_of_time(
        ck25, llm_server, text2sparql_client, tmp_path):
    questions_path, store, _ = ck25
    brant = yaml.safe_load(questions_path.read_text())["questions"][0]
    ck25_file = {"dataset": {"id": CK25_DATASET, "prefix": "ck25"},
                 "questions": [{"id": 1, "question": {"en": brant["question"]["en"], "de": CK25_GERMAN}}]}
    dbpedia_file = {"dataset": {"id": DBPEDIA_DATASET, "prefix": "dbpedia"},
                    "questions": [{"id": 1, "question": DBPEDIA_QUESTION}]}
    queries = {brant["question"]["en"]: brant["query"]["sparql"], CK25_GERMAN: brant["query"]["sparql"],
               **{text: DBPEDIA_QUERY for text in DBPEDIA_QUESTION.values()}}
    # The German question's model answers its first call and is then held for good: only the deadline ends it.
    held = HeldReply(ToolCallReply("stop", {"thought": "done", "explanation": "Found.", "language": "de"}))

    def script(body):
        question = _question_of(body)
        if not _tool_messages(body):
            return ToolCallReply("execute_sparql", {"thought": "run it", "sparql": queries[question]})
        if question == CK25_GERMAN:
            return held
        return ToolCallReply("stop", {"thought": "done", "explanation": "Found.", "language": "en"})

    llm = llm_server(script)
    dbpedia = build_fixture_store(tmp_path / "dbpedia", "dbpedia")
    service = start_serve(llm.base_url, {"ck25": store, "dbpedia": dbpedia}, tmp_path,
                          {CK25_DATASET: "ck25", DBPEDIA_DATASET: "dbpedia"},
                          ("--answer-within", str(ANSWER_WITHIN)))
    asked = {}
    try:
        for name, content in (("ck25", ck25_file), ("dbpedia", dbpedia_file)):
            (tmp_path / f"{name}.yml").write_text(yaml.safe_dump(content, allow_unicode=True))
            asked[name] = run_client(text2sparql_client, "ask", "--answers-db", "responses.db", "-o",
                                     f"{name}-answers.json", *ORGANISERS, f"{name}.yml",
                                     service.base + "/text2sparql", cwd=tmp_path)
        released_late = held.release.is_set()
    finally:
        held.release.set()
        log = service.stop()
    for name, done in asked.items():
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Retrying" not in done.stderr and "validation error" not in done.stderr, done.stderr[-3000:]
    answers = {answer["qname"]: answer for name in asked
               for answer in json.loads((tmp_path / f"{name}-answers.json").read_text())}
    expected = {"ck25:1-en": brant["question"]["en"], "ck25:1-de": CK25_GERMAN,
                "dbpedia:1-en": DBPEDIA_QUESTION["en"], "dbpedia:1-es": DBPEDIA_QUESTION["es"]}
    assert {qname: (answer["question"], answer["query"]) for qname, answer in answers.items()} == \
        {qname: (question, queries[question].strip()) for qname, question in expected.items()}
    # The German question ran out of time: its run was stopped, its model request closed, its best query answered.
    assert held.closed.is_set() and not released_late
    assert f"text2sparql: ck25: out of time after 1 step; answered with its best query so far: {CK25_GERMAN}" in log
    assert f"run stopped (past its deadline; its model request closed): {CK25_GERMAN}" in log
    assert log.count("out of time") == 1 and "Traceback" not in log


@pytest.mark.parametrize("value", ["0", "-5", "nan"])
def test_an_answer_deadline_that_is_no_time_is_refused_in_one_line(value, capsys):
    assert serve_main(["--answer-within", value]) == 2
    assert capsys.readouterr().err == "error: --answer-within must be at least 1\n"
