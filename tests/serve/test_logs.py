"""``spinach-serve`` keeps its model's key and its log honest, against a model that repeats what it was sent and
requests and model errors written to forge log lines or reach the operator's terminal.

The server runs as its operators start it (``python -m serve``) on the library graph, its model the scripted
stand-in on loopback, which repeats the ``Authorization`` header it receives (as a proxy or a careless server may)
or refuses it with OpenAI's 401, the key quoted.  Each test reads what a client reads (the API's JSON, the chat
page's events as the page receives them) and the server's real log (its stderr and stdout).
"""

from __future__ import annotations

import base64
import json
import re
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest

from tests.support.llm_server import ErrorReply, FakeLLMServer, FromHeaders, ToolCallReply, openai_wrong_key
from tests.support.llm_server import asked_question as _question, steps_so_far as _steps
from tests.support.processes import PATIENCE
from tests.support.serve_rig import build_library_store, start_serve

#: One worker runs them all: they share one server and read its one log.
pytestmark = pytest.mark.xdist_group("serve-logs")
#: The model's key: a slash, a plus and an equals sign make its percent-encoded form differ from it.
KEY = "sk-serve/echo+key=42"
#: Every form the key may travel in: as is, percent-encoded, base64 (standard and URL-safe, padded or not).
KEY_FORMS = sorted({KEY, urllib.parse.quote(KEY, safe=""), urllib.parse.quote_plus(KEY)}
                   | {encoded.rstrip("=") for encoded in (base64.b64encode(KEY.encode()).decode(),
                                                          base64.urlsafe_b64encode(KEY.encode()).decode())})
DATASET = "https://example.org/library/"
#: A line of the server's own, as a request or a model would forge it.
FORGED = "2026-11-28 12:00:00,000 INFO serve.text2sparql: FORGED"
#: How every line of the server's log starts: the time, the level, the logger.
OWN_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")
#: Retitles the operator's terminal (OSC 0, ended by BEL); then a bidi override that shows the rest backwards.
TERMINAL = "\x1b]0;pwned\x07\u202etxt.exe"


def _echo(headers) -> ToolCallReply:
    """The model repeats the header it was sent, and the key in each form it may travel in."""
    said = " ".join([headers["Authorization"], *KEY_FORMS])
    values = " ".join(json.dumps(form) for form in [headers["Authorization"], *KEY_FORMS])
    return ToolCallReply("execute_sparql", {"thought": f"I was sent {said}",
                                            "sparql": f"SELECT ?sent WHERE {{ VALUES ?sent {{ {values} }} }}"})


def scripted(body: dict[str, Any]):
    question, steps = _question(body), _steps(body)
    if question.startswith("echo"):
        if steps == 0:
            return FromHeaders(_echo)
        return FromHeaders(lambda headers: ToolCallReply("stop", {
            "thought": f"done with {headers['Authorization']}", "language": "en",
            "explanation": f"The key I was sent is {headers['Authorization']}."}))
    if question.startswith("rejected"):
        return FromHeaders(lambda headers: openai_wrong_key(headers["Authorization"].removeprefix("Bearer ")))
    if question.startswith("broken"):  # the endpoint's error message, which the client passes on as it is
        return ErrorReply(400, body={"error": {"type": "server_error", "message": (
            f"upstream failed\n{FORGED} by the model\r{FORGED} again {TERMINAL}\u2028{FORGED}\x85{FORGED} "
            f"key {KEY}")}})
    return ToolCallReply("stop", {"thought": "nothing here", "cannot_answer": True, "explanation": "No.",
                                  "language": "en"})


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    llm = FakeLLMServer(scripted)
    directory = tmp_path_factory.mktemp("serve-logs")
    # Every request's own line too (--access-log): what a request puts in the URL must be as harmless there.
    started = start_serve(llm.base_url, {"library": build_library_store(directory)}, directory, {DATASET: "library"},
                          ("--access-log",), key=KEY)
    yield started
    started.stop()
    llm.close()


def ask(service, question: str, dataset: str = DATASET) -> tuple[int, str]:
    """The API's status and body, as the client reads them."""
    url = service.base + "/text2sparql?" + urllib.parse.urlencode({"question": question, "dataset": dataset})
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def log_size(service) -> int:
    return service.log.stat().st_size


def log_after(service, written: str, since: int = 0, seconds: float = PATIENCE) -> str:
    """The server's log from byte *since* on, once it holds a match of the pattern *written*, whole lines only."""
    deadline = time.monotonic() + seconds
    while True:
        with service.log.open("rb") as log:
            log.seek(since)
            text = log.read().decode("utf-8", errors="backslashreplace")
        text = text[:text.rfind("\n") + 1]
        if re.search(written, text):
            return text
        assert time.monotonic() < deadline, f"{written!r} is not in the log:\n{text[-3000:]}"
        time.sleep(0.05)


def raw_characters(line: str) -> list[str]:
    """The control, format and separator characters of *line*: each would reach the reader's terminal raw."""
    return [char for char in line if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs")]


def assert_honest(lines: str) -> None:
    """Every line of *lines* is the server's own (its time, level and logger first, never a forged one), holds no
    raw control, format or separator character, and no form of the key."""
    lines = lines.split("\n")[:-1]
    assert lines
    for line in lines:
        assert OWN_LINE.match(line) and not line.startswith(FORGED[:23]), f"a line not the server's own: {line!r}"
        assert not raw_characters(line), f"raw {raw_characters(line)!r} in {line!r}"
        assert not any(form in line for form in KEY_FORMS), f"the key in {line!r}"


def requested(text: str) -> str:
    """A pattern of uvicorn's line for a request whose URL holds *text* (the last line a request writes)."""
    return r'"GET [^\n]*' + re.escape(text) + r'[^\n]* HTTP/1\.1" \d+'  # in any format


def assert_honest_log(service, since: int, written: str) -> str:
    """The lines the server wrote from *since* until a match of *written* are honest, and so is its whole log;
    those lines."""
    lines = log_after(service, written, since)
    assert_honest(lines)
    assert_honest(log_after(service, written))
    return lines


def assert_no_key(text: str) -> None:
    assert not [form for form in KEY_FORMS if form in text], text


def test_a_model_that_repeats_its_key_gets_it_masked_in_the_answer_and_the_log(service):
    since = log_size(service)
    status, body = ask(service, "echo the key you were sent")
    assert status == 200, body
    assert_no_key(body)
    query = json.loads(body)["query"]
    assert query.startswith("SELECT ?sent WHERE") and "Bearer [redacted]" in query
    assert_honest_log(service, since, requested("question=echo"))


def test_the_chat_pages_events_hold_no_key(service):
    since = log_size(service)
    request = urllib.request.Request(service.base + "/chat/runs", method="POST",
                                     headers={"Content-Type": "application/json"},
                                     data=json.dumps({"question": "echo from the page", "graph": "library"}).encode())
    with urllib.request.urlopen(request, timeout=60) as response:
        run = json.load(response)["run"]
    with urllib.request.urlopen(f"{service.base}/chat/runs/{run}/events", timeout=60) as response:
        events = response.read().decode()
    assert "event: final" in events and "event: end" in events, events
    assert_no_key(events)
    assert "Bearer [redacted]" in events  # in the step, the query and the explanation
    assert_honest_log(service, since, "chat: library: stop")


def test_a_401_that_quotes_the_key_is_a_503_and_a_log_line_without_it(service):
    since = log_size(service)
    status, body = ask(service, "rejected: the endpoint refuses the key")
    assert status == 503 and json.loads(body) == {
        "detail": "the language model or the knowledge graph failed; ask again later"}
    assert_no_key(body)
    lines = assert_honest_log(service, since, requested("question=rejected"))
    assert "llm_error" in lines and "Incorrect API key provided: [redacted]" in lines


@pytest.mark.parametrize("where, text", [
    ("dataset", f"\n{FORGED}"),  # the issue's %0a
    ("dataset", f"\r{FORGED}"),
    ("dataset", f"\r\n{FORGED}{TERMINAL}"),
    ("dataset", f"\u2028{FORGED}\u2029{FORGED}\x85{FORGED}\x1c{FORGED}"),
    ("dataset", "x" * 6000 + f"\n{FORGED}"),
    ("question", f"\n{FORGED}"),
    ("question", f" {TERMINAL}"),
    ("question", " \x1b[2J\x1b[31mred\x9b0m\x00\x7f\u200b\u2066\ufeff\U000e0041"),
    ("question", f"\u2028{FORGED}\x85{FORGED}\x0b{FORGED}\x0c{FORGED}"),
    ("question", "x" * 6000 + f"\n{FORGED}"),
], ids=["dataset-LF", "dataset-CR", "dataset-CRLF-ESC-BEL-RLO", "dataset-separators", "dataset-long",
        "question-LF", "question-ESC-BEL-RLO", "question-controls", "question-separators", "question-long"])
def test_a_request_cannot_forge_a_log_line_or_reach_the_terminal(service, where, text):
    marker = f"case{time.monotonic_ns()}"
    asked = {"question": "plain question about the catalogue", "dataset": DATASET}
    asked[where] = ("plain " if where == "question" else "") + marker + text
    since = log_size(service)
    status, body = ask(service, asked["question"], asked["dataset"])
    assert status == (404 if where == "dataset" else 200), body
    lines = assert_honest_log(service, since, requested(marker))
    mentions = [line for line in lines.split("\n") if marker in line]  # the server's line, and uvicorn's
    assert len(mentions) == 2 and all(len(line) < 1500 for line in mentions), "a request's value was logged whole"


def test_the_issues_forged_dataset_is_written_escaped_on_the_servers_own_line(service):
    since = log_size(service)
    status, _ = ask(service, "plain question", f"issue\n{FORGED}{TERMINAL}")
    assert status == 404
    lines = assert_honest_log(service, since, requested("dataset=issue"))
    assert f"INFO serve.text2sparql: text2sparql: unknown dataset issue\\n{FORGED}\\x1b]0;pwned\\x07\\u202etxt.exe\n" \
        in lines


def test_a_model_error_cannot_forge_a_log_line_or_show_the_key(service):
    since = log_size(service)
    status, body = ask(service, "broken model endpoint")
    assert status == 503
    assert_no_key(body)
    lines = assert_honest_log(service, since, requested("question=broken"))
    assert "llm_error" in lines and "upstream failed" in lines and "key [redacted]" in lines


def test_by_default_a_served_question_writes_one_line_of_the_services_own(tmp_path):
    """The operator reads the service's lines (a question and its outcome), not one per HTTP request."""
    llm = FakeLLMServer(scripted)
    service = start_serve(llm.base_url, {"library": build_library_store(tmp_path)}, tmp_path, {DATASET: "library"},
                          key=KEY)
    try:
        since = log_size(service)
        # A line a request writes is written before its answer is sent: once the answer is read, all are there.
        status, _ = ask(service, "plain question about the catalogue")
        assert status == 200
        with service.log.open("rb") as log:
            log.seek(since)
            question_lines = log.read().decode().splitlines()
    finally:
        whole = service.stop()
        llm.close()
    assert len(question_lines) == 1, question_lines
    assert re.fullmatch(OWN_LINE.pattern + r"text2sparql: library: cannot_answer in [\d.]+ s \(no query: answered "
                        r"with an empty one\): plain question about the catalogue", question_lines[0])
    assert_honest(whole)
    assert "HTTP Request" not in whole and "HTTP/1.1" not in whole, whole  # the model's requests, and the server's
    assert {line.split(" ")[3] for line in whole.splitlines()} <= {"serve:", "serve.text2sparql:", "uvicorn.error:"}
