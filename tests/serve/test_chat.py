"""The chat page of ``spinach-serve`` as its readers see it, in headless Chromium.

The server runs as its operators start it, on a small Wikidata store, its
model the scripted stand-in; each test drives the page as a person does
(type a question, press Ask) and reads what the page shows.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agent.kb.local import LocalKB
from agent.llm import well_formed
from agent.text import clean
from tests.support.llm_server import EndlessReply, ErrorReply, HeldReply, SlowReply, ToolCallReply
from tests.support.llm_server import asked_question as _question, steps_so_far as _calls
from tests.support.paths import FIXTURES
from tests.support.processes import PATIENCE, wait_for
from tests.support.serve_rig import KEY, build_library_store, start_serve

#: One worker runs them all: they share the stores and the browser.
pytestmark = pytest.mark.xdist_group("serve-chat")
HOSTILE = FIXTURES / "hostile"
QUERY = "SELECT ?x WHERE { VALUES ?x { \"Zurich\" \"Geneva\" } }"
LABELLED = "SELECT ?city WHERE { VALUES ?city { wd:Q72 } }"
REVISED = "SELECT ?x WHERE { VALUES ?x { \"Zurich\" \"Geneva\" \"Basel\" } }"
#: Seconds the model takes over its last reply in the slow run: the page must show steps before it ends.
SLOW = 3
#: The page's own elements in the conversation: everything else would be markup from someone else.
PAGE_TAGS = {"SECTION", "P", "OL", "LI", "PRE", "DIV", "A", "SPAN", "BUTTON", "DETAILS", "SUMMARY", "TABLE", "THEAD",
             "TBODY", "TR", "TH", "TD"}
#: Control, format (bidi) and separator characters that must not reach the reader.
INVISIBLE = re.compile("[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                       "\ufeff\ufff9-\ufffb]")


def hostile_payloads() -> list[str]:
    """The payloads of the wiki's hostile corpus (script, markup, links, bidi and control characters)."""
    payloads = []
    for path in sorted(HOSTILE.glob("*.json")):
        for case in json.loads(path.read_text()):
            text = case["payload"] * case.get("repeat", 1)
            if 0 < len(text) <= 400:
                payloads.append(text)
    return list(dict.fromkeys(payloads))


def label_payloads() -> list[str]:
    """The first payload of each family that a Turtle file can hold (no lone surrogate): labels and descriptions."""
    chosen = []
    for path in sorted(HOSTILE.glob("*.json")):
        for case in json.loads(path.read_text()):
            text = case["payload"]
            if 0 < len(text) <= 200 and not any("\ud800" <= char <= "\udfff" for char in text):
                chosen.append(text)
                break
    return chosen


def _sparql_string(text: str) -> str:
    return json.dumps(text)  # JSON's escapes (\", \\, \n, \uXXXX) are SPARQL's too


#: Questions answered in two model calls, by how they start: the query's thought and query, then the stop's
#: thought and explanation.
TWO_STEPS = {
    "quick": ("A look.", QUERY, "", "Two cities."),
    "labels": ("Zurich by its ID.", LABELLED, "", "Zurich, by its ID."),
    "revise": ("Add Basel to the earlier query.", REVISED, "done", "Three cities now."),
}


def scripted(body: dict[str, Any]):
    question, taken = _question(body), _calls(body)
    if question.startswith("slow"):
        if taken == 0:
            return ToolCallReply("execute_sparql", {"thought": f"First look ({question}).", "sparql": QUERY})
        return SlowReply(SLOW, ToolCallReply("stop", {"thought": "done", "explanation": "Two cities.",
                                                      "language": "en"}))
    two = next((steps for start, steps in TWO_STEPS.items() if question.startswith(start)), None)
    if two is not None:  # a query, then the stop
        thought, query, last_thought, explanation = two
        if taken == 0:
            return ToolCallReply("execute_sparql", {"thought": thought, "sparql": query})
        return ToolCallReply("stop", {"thought": last_thought, "explanation": explanation, "language": "en"})
    if question.startswith("search the library"):
        if taken == 0:
            return ToolCallReply("search_graph", {"thought": "Find Dune.", "query": "Dune"})
        if taken == 1:
            return ToolCallReply("execute_sparql", {"thought": "The books.", "sparql": QUERY})
        return ToolCallReply("stop", {"thought": "", "explanation": "Found it.", "language": "en"})
    if question.startswith("hostile"):
        payloads = hostile_payloads()
        chunks = [payloads[start:start + 25] for start in range(0, len(payloads), 25)]
        if taken == 0:  # the graph's labels and descriptions
            return ToolCallReply("search_wikidata", {"thought": payloads[2], "query": "hostile"})
        if taken == 1:
            return ToolCallReply("get_wikidata_entry", {"thought": payloads[3], "qid": "Q90001"})
        taken -= 2
        if taken < len(chunks):
            values = " ".join(_sparql_string(text) for text in chunks[taken])
            return ToolCallReply("execute_sparql", {"thought": " ".join(chunks[taken][:3]),
                                                    "sparql": f"SELECT ?v WHERE {{ VALUES ?v {{ {values} }} }}"})
        if taken == len(chunks):  # the agent stops only on a query that returned rows
            return ToolCallReply("execute_sparql", {"thought": payloads[1], "sparql": QUERY})
        return ToolCallReply("stop", {"thought": payloads[0], "explanation": "\n".join(payloads), "language": "en"})
    if question.startswith("failing"):
        return ErrorReply(400, f"invalid api key {KEY}")
    if question.startswith("endless"):
        return SlowReply(0.5, ToolCallReply("execute_sparql", {
            "thought": "one more", "sparql": f"SELECT ?x WHERE {{ VALUES ?x {{ {taken} }} }}"}))
    raise AssertionError(f"unscripted question {question!r}")


@pytest.fixture(scope="module")
def wikidata_store(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("chat-store")
    data = directory / "cities.ttl"
    lines = ['<http://www.wikidata.org/entity/Q72> <http://www.w3.org/2000/01/rdf-schema#label> "Zurich"@en .']
    for number, text in enumerate(label_payloads()):  # entities whose labels and descriptions are hostile
        subject = f"<http://www.wikidata.org/entity/Q{90000 + number}>"
        lines.append(f"{subject} <http://www.w3.org/2000/01/rdf-schema#label> "
                     f"{json.dumps('hostile ' + text, ensure_ascii=False)}@en .")
        lines.append(f"{subject} <http://schema.org/description> {json.dumps(text, ensure_ascii=False)}@en .")
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kb = LocalKB(directory / "store")
    kb.load([data], progress=False)
    kb.close()
    return directory / "store"


@pytest.fixture(scope="module")
def library_store(tmp_path_factory) -> Path:
    """The tests' third graph, a library catalogue with a profile of its own: no query service to link to."""
    return build_library_store(tmp_path_factory.mktemp("library"))


@pytest.fixture
def service(llm_server, wikidata_store, library_store, tmp_path):
    llm = llm_server(scripted)
    started = start_serve(llm.base_url, {"wikidata": wikidata_store, "library": library_store}, tmp_path,
                          options=("--timeout", "60"))
    started.llm = llm
    yield started
    started.stop()


def open_page(browser, service) -> None:
    browser.open(service.base + "/", "document.body.dataset.ready === 'true'")
    browser.evaluate("""(() => {
        window.seen = {firstStep: null, done: null};
        window.alerted = false;
        window.alert = () => { window.alerted = true; };
        new MutationObserver(() => {
            if (window.seen.firstStep === null && document.querySelector('#log .step:not(.counted)'))
                window.seen.firstStep = performance.now();
        }).observe(document.getElementById('log'), {childList: true, subtree: true});
        return true;
    })()""")


def ask(browser, question: str) -> float:
    """Type *question* and press Ask; the page's clock at that moment."""
    return browser.evaluate(f"""(() => {{
        document.querySelectorAll('#log .step').forEach((step) => step.classList.add('counted'));
        window.seen = {{firstStep: null, done: null}};
        document.getElementById('question').value = {json.dumps(question)};
        document.getElementById('send').click();
        return performance.now();
    }})()""")


def wait_done(browser, turns: int, seconds: float = PATIENCE) -> None:
    deadline = time.monotonic() + seconds
    while browser.evaluate("document.querySelectorAll('#log .turn[data-done]').length") < turns:
        assert time.monotonic() < deadline, browser.evaluate("document.getElementById('log').innerText")
        time.sleep(0.05)


def turn(browser, index: int) -> dict[str, Any]:
    return browser.evaluate(f"""(() => {{
        const turn = document.querySelectorAll('#log .turn')[{index}];
        const text = (selector) => [...turn.querySelectorAll(selector)].map((node) => node.textContent);
        return {{steps: text('.step'), query: text('.query'), preview: text('.preview'),
                 explanation: text('.explanation'), failed: text('.failed'), note: text('.note'),
                 links: [...turn.querySelectorAll('a')].map((a) => a.href)}};
    }})()""")


def test_steps_appear_before_the_run_ends_and_a_follow_up_keeps_the_context(browser, service):
    open_page(browser, service)
    asked_at = ask(browser, "slow question about cities")
    deadline = time.monotonic() + PATIENCE
    while browser.evaluate("window.seen.firstStep") is None:
        assert time.monotonic() < deadline, "no step was shown"
        time.sleep(0.02)
    assert not browser.evaluate("document.querySelectorAll('#log .turn[data-done]').length"), \
        "the run had ended when its first step showed"
    first_step = browser.evaluate("window.seen.firstStep") - asked_at
    wait_done(browser, 1)
    first = turn(browser, 0)
    assert first["steps"][0].startswith("1. First look (slow question about cities).")
    assert "Zurich" in first["steps"][0] and "Geneva" in first["steps"][0]  # every row of a short result
    assert first["query"] == [QUERY] and first["explanation"] == ["Two cities."]
    assert first["links"] and first["links"][0].startswith("https://query.wikidata.org/#SELECT")
    assert "Geneva" in first["preview"][0]
    print(f"time to first step on the page: {first_step:.0f} ms")

    ask(browser, "revise it: add Basel")
    wait_done(browser, 2)
    second = turn(browser, 1)
    assert second["query"] == [REVISED] and "Basel" in second["preview"][0]
    follow_up = [body for body in service.llm.requests if _question(body).startswith("revise")][0]
    prompt = follow_up["messages"][1]["content"]
    assert "Asked: slow question about cities\nAnswered: Two cities." in prompt
    assert QUERY in prompt, "the follow-up's prompt lacks the query it revises"
    assert browser.evaluate("document.getElementById('graph').disabled")


def test_the_graph_is_picked_from_those_served_and_kept_for_the_conversation(browser, service):
    open_page(browser, service)
    options = browser.evaluate("[...document.querySelectorAll('#graph option')].map((o) => [o.value, o.text])")
    assert options == [["wikidata", "Wikidata"], ["library", "the library catalogue"]]
    browser.evaluate("document.getElementById('graph').value = 'library'")
    ask(browser, "slow question about the library")
    wait_done(browser, 1)
    shown = turn(browser, 0)
    assert shown["query"] == [QUERY] and shown["links"] == [], "a Try-it link for a graph without a query service"
    asked = [body for body in service.llm.requests if _question(body).startswith("slow question about the library")]
    assert "the library catalogue" in asked[0]["messages"][0]["content"]
    assert browser.evaluate("document.getElementById('graph').disabled")
    browser.evaluate("document.getElementById('new').click()")
    assert not browser.evaluate("document.getElementById('graph').disabled")
    assert browser.evaluate("document.querySelectorAll('#log .turn').length") == 0


def test_hostile_text_stays_text(browser, service):
    open_page(browser, service)
    payloads = hostile_payloads()
    ask(browser, "hostile " + payloads[0])
    wait_done(browser, 1)
    shown = browser.evaluate("""(() => {
        const log = document.getElementById('log');
        const elements = [...log.querySelectorAll('*')];
        return {tags: [...new Set(elements.map((node) => node.tagName))],
                attributes: [...new Set(elements.flatMap((node) => [...node.attributes].map((a) => a.name)))],
                links: [...log.querySelectorAll('a')].map((a) => [a.className, a.href]),
                text: log.textContent, alerted: window.alerted, title: document.title,
                loaded: performance.getEntriesByType('resource').map((entry) => entry.name),
                scripts: document.scripts.length, html: document.documentElement.outerHTML};
    })()""")
    assert set(shown["tags"]) <= PAGE_TAGS, shown["tags"]
    assert set(shown["attributes"]) <= {"class", "data-action", "data-done", "href", "rel", "target", "open", "type",
                                       "scope", "role"}
    assert all(kind == "try-it" and href.startswith("https://query.wikidata.org/#") for kind, href in shown["links"])
    assert not shown["alerted"] and shown["scripts"] == 1 and shown["title"] == "SPINACH: ask a knowledge graph"
    assert not INVISIBLE.search(shown["text"]), repr(INVISIBLE.findall(shown["text"])[:10])
    shown_turn = turn(browser, 0)
    assert shown_turn["explanation"], shown_turn["note"]
    explanation = shown_turn["explanation"][0]
    search, entry = shown_turn["steps"][:2]
    assert "search_wikidata(hostile)" in search and "(Q90000)" in search and "(Q90003)" in search, search
    assert "(Q90001)" in entry and visible(label_payloads()[1]).splitlines()[0][:40] in entry, entry
    missing = [text for text in payloads
               if not all(line.strip() in explanation for line in visible(text).splitlines())]
    assert not missing, f"{len(missing)} payloads not shown as text, e.g. {missing[:3]!r}"
    assert KEY not in shown["html"]
    # Nothing from elsewhere: every file the page loaded is the server's, and its policy forbids the rest.
    assert shown["loaded"] and all(url.startswith(service.base + "/") for url in shown["loaded"]), shown["loaded"]
    with urllib.request.urlopen(service.base + "/", timeout=30) as response:
        policy = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy


def visible(text: str) -> str:
    """*text* as the page may show it: a lone surrogate as the model client reads it (U+FFFD), then without the
    characters a page drops (controls, bidi and other format characters), as the wiki's replies show it."""
    return clean(well_formed(text))


def test_a_failing_model_says_so_without_its_key(browser, service):
    open_page(browser, service)
    ask(browser, "failing question")
    wait_done(browser, 1)
    shown = turn(browser, 0)
    assert shown["note"] == ["The language model could not be reached; ask again later."]
    assert KEY not in browser.evaluate("document.documentElement.outerHTML")


def test_two_browsers_at_once_each_get_their_own_run(browser, another_browser, service):
    open_page(browser, service)
    open_page(another_browser, service)
    ask(browser, "slow question from the first reader")
    ask(another_browser, "slow question from the second reader")
    wait_done(browser, 1)
    wait_done(another_browser, 1)
    first, second = turn(browser, 0), turn(another_browser, 0)
    assert "first reader" in first["steps"][0] and "second reader" not in first["steps"][0]
    assert "second reader" in second["steps"][0] and "first reader" not in second["steps"][0]
    assert first["query"] == second["query"] == [QUERY]


def _stops_when_gone(browser, service, leave, question: str, held: HeldReply) -> None:
    """The run of *question*, whose third model call is *held*, stops once its page has gone (*leave*) and no page
    came back to it for the server's grace (a reload's time)."""
    log = service.log.read_text
    cancelled, stopped = log().count("cancelled: its page went away"), log().count("run stopped (client gone")
    open_page(browser, service)
    ask(browser, question)
    wait_for(lambda: held.arrived.is_set() and browser.evaluate("document.querySelectorAll('#log .step').length") >= 2,
             PATIENCE, "two steps shown")
    leave()
    wait_for(lambda: log().count("cancelled: its page went away") > cancelled, PATIENCE, "the run's cancellation")
    asked = len(service.llm.requests)  # its model request was closed: the run asks nothing more
    wait_for(lambda: log().count("run stopped (client gone") > stopped, PATIENCE, "the run's end")
    held.release.set()
    assert len(service.llm.requests) == asked, "the run went on after its page went away"
    assert log().count("cancelled: its page went away") == cancelled + 1


def test_a_question_waiting_for_a_worker_says_so(browser, another_browser, llm_server, wikidata_store, tmp_path):
    held = HeldReply(ToolCallReply("stop", {"thought": "done", "explanation": "Two cities.", "language": "en"}))

    def script(body):  # the only worker is held at the model until the second reader has seen the wait
        return held if _question(body).startswith("slow question that holds") and _calls(body) else scripted(body)

    llm = llm_server(script)
    service = start_serve(llm.base_url, {"wikidata": wikidata_store}, tmp_path, options=("--workers", "1"))
    status = "document.querySelector('#log .status')?.textContent"
    try:
        open_page(browser, service)
        open_page(another_browser, service)
        ask(browser, "slow question that holds the only worker")
        wait_for(held.arrived.is_set, PATIENCE, "the first run holding the worker")
        ask(another_browser, "slow question that waits")
        wait_for(lambda: "in line" in (another_browser.evaluate(status) or ""), PATIENCE,
                 "the second reader's place in line")
        waiting = another_browser.evaluate(status)
        steps_while_waiting = another_browser.evaluate("document.querySelectorAll('#log .step').length")
        held.release.set()
        wait_done(browser, 1)
        wait_for(lambda: another_browser.evaluate(status) == "The agent is exploring the graph…", PATIENCE,
                 "the waiting question starting")
        wait_done(another_browser, 1)
    finally:
        held.release.set()
        service.stop()
    assert waiting == "Waiting for a free agent: 1st in line." and steps_while_waiting == 0
    assert turn(another_browser, 0)["query"] == [QUERY]
    assert another_browser.evaluate("document.querySelector('#log .status')") is None


def test_a_run_stops_when_its_page_goes_away(browser, another_browser, llm_server, wikidata_store, tmp_path):
    helds = {question: HeldReply(ToolCallReply("execute_sparql", {"thought": "more", "sparql": QUERY}))
             for question in ("endless, left for another page", "endless, its browser closed")}
    llm = llm_server(lambda body: helds[_question(body)] if _question(body) in helds and _calls(body) == 2
                     else scripted(body))
    service = start_serve(llm.base_url, {"wikidata": wikidata_store}, tmp_path)
    service.llm = llm
    try:
        _stops_when_gone(browser, service, lambda: browser.call("Page.navigate", url="about:blank"),
                         "endless, left for another page", helds["endless, left for another page"])
        _stops_when_gone(another_browser, service, another_browser.close, "endless, its browser closed",
                         helds["endless, its browser closed"])
    finally:
        for held in helds.values():
            held.release.set()
        service.stop()


def test_a_run_past_its_deadline_says_so(browser, llm_server, wikidata_store, tmp_path):
    """The model holds the run's first call past the run's deadline: the page says so when the deadline comes, and
    the run stops there, its model request closed (the reply it held is never read)."""
    held = HeldReply(ToolCallReply("stop", {"thought": "", "explanation": "Too late.", "language": "en"}))
    llm = llm_server(lambda body: held if _question(body) == "endless question" else scripted(body))
    service = start_serve(llm.base_url, {"wikidata": wikidata_store}, tmp_path, options=("--timeout", "2"))
    try:
        open_page(browser, service)
        ask(browser, "endless question")
        wait_done(browser, 1)
        shown = turn(browser, 0)
        wait_for(lambda: "run stopped (past its deadline; its model request closed)" in service.log.read_text(),
                 PATIENCE, "the run's end at its deadline")
        wait_for(held.closed.is_set, PATIENCE, "the model request closed")
    finally:
        held.release.set()
        log = service.stop()
    assert shown["failed"] == ["No answer within 2 seconds."] and not shown["query"]
    assert "no answer within 2 s" in log and len(llm.requests) == 1


def test_a_form_posted_from_another_site_starts_no_run(service):
    """A page elsewhere can post a form (text/plain) without asking first, but not JSON: the server takes JSON only."""
    request = urllib.request.Request(service.base + "/chat/runs", method="POST", headers={
        "Content-Type": "text/plain", "Origin": "https://elsewhere.example"},
        data=json.dumps({"question": "slow question", "graph": "wikidata"}).encode())
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 422
    assert not service.llm.requests


class EventReader(threading.Thread):
    """A page's event stream read over HTTP, as the page's EventSource reads it: the events, in order, until ``end``
    (a question a test lines up keeps a reader, as a page that watches it does)."""

    def __init__(self, base: str, run: str) -> None:
        super().__init__(daemon=True)
        self.base, self.run_id = base, run
        self.events: list[tuple[str, Any]] = []

    def run(self) -> None:
        host, port = self.base.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=PATIENCE)
        connection.request("GET", f"/chat/runs/{self.run_id}/events")
        response = connection.getresponse()
        name = ""
        for raw in response:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("event:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                self.events.append((name, json.loads(line.split(":", 1)[1])))
                if name == "end":
                    break
        connection.close()

    def named(self, name: str) -> list[Any]:
        return [data for event, data in list(self.events) if event == name]


def post(base: str, path: str, body: dict[str, Any] | None = None, source: str = "127.0.0.1"
         ) -> tuple[int, dict[str, str], dict[str, Any]]:
    """A POST as the page sends it, from the loopback address *source* (another client)."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60, source_address=(source, 0))
    connection.request("POST", path, body=json.dumps(body or {}), headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = json.loads(response.read() or b"{}")
    connection.close()
    return response.status, dict(response.headers), answer


def line_up(base: str, question: str, source: str = "127.0.0.1") -> EventReader:
    status, _, body = post(base, "/chat/runs", {"question": question, "graph": "wikidata"}, source)
    assert status == 200, body
    reader = EventReader(base, body["run"])
    reader.start()
    return reader


def held_service(llm_server, wikidata_store, tmp_path, options: tuple[str, ...] = ("--workers", "1")):
    """A server whose one worker is held at the model by the question "held …" until the test releases it."""
    held = HeldReply(ToolCallReply("stop", {"thought": "", "explanation": "Two cities.", "language": "en"}))

    def script(body):
        if _question(body).startswith("held") and _calls(body):
            return held
        if _question(body).startswith("held"):
            return ToolCallReply("execute_sparql", {"thought": "First look.", "sparql": QUERY})
        return scripted(body)

    llm = llm_server(script)
    service = start_serve(llm.base_url, {"wikidata": wikidata_store}, tmp_path, options=options)
    service.llm = llm
    return service, held


STATUS = "document.querySelector('#log .status')?.textContent"


def test_a_persons_questions_wait_in_line_and_the_page_shows_its_place(browser, llm_server, wikidata_store, tmp_path):
    service, held = held_service(llm_server, wikidata_store, tmp_path)
    try:
        first = line_up(service.base, "held question")
        wait_for(held.arrived.is_set, PATIENCE, "the first question holding the only worker")
        second, third = line_up(service.base, "quick second"), line_up(service.base, "quick third")
        wait_for(lambda: second.named("queued") and third.named("queued"), PATIENCE, "both questions in line")
        assert second.named("queued") == [{"position": 1}] and third.named("queued") == [{"position": 2}]
        open_page(browser, service)
        ask(browser, "quick question from the page")  # the same person's fourth: it waits, it is not refused
        wait_for(lambda: browser.evaluate(STATUS) == "Waiting for a free agent: 3rd in line.", PATIENCE,
                 f"the page's place in line ({browser.evaluate(STATUS)!r})")
        status, _, _ = post(service.base, f"/chat/runs/{second.run_id}/stop")
        assert status == 202
        wait_for(lambda: browser.evaluate(STATUS) == "Waiting for a free agent: 2nd in line.", PATIENCE,
                 f"the page moving up the line ({browser.evaluate(STATUS)!r})")
        second.join(PATIENCE)
        assert second.named("failed") == [{"message": "Stopped, as you asked."}] and not second.named("started")
        held.release.set()
        wait_done(browser, 1)
        first.join(PATIENCE)
        third.join(PATIENCE)
    finally:
        held.release.set()
        log = service.stop()
    assert turn(browser, 0)["query"] == [QUERY]
    assert third.named("final")[0]["query"] == QUERY and first.named("final")
    assert not [body for body in service.llm.requests if _question(body) == "quick second"], \
        "a question stopped while it waited reached the model"
    assert "refused" not in log


def test_the_line_is_bounded_for_each_person_and_for_the_server(llm_server, wikidata_store, tmp_path):
    service, held = held_service(llm_server, wikidata_store, tmp_path,
                                 ("--workers", "1", "--queue", "3", "--waiting-per-client", "2"))
    try:
        readers = [line_up(service.base, "held question")]
        wait_for(held.arrived.is_set, PATIENCE, "the first question holding the only worker")
        readers += [line_up(service.base, "quick two"), line_up(service.base, "quick three")]
        status, headers, body = post(service.base, "/chat/runs", {"question": "quick four", "graph": "wikidata"})
        assert status == 429 and headers["retry-after"] == "10"
        assert body["detail"] == "you have 2 questions waiting in line; wait for one to start"
        readers.append(line_up(service.base, "quick from another reader", source="127.0.0.2"))
        status, headers, body = post(service.base, "/chat/runs", {"question": "quick five", "graph": "wikidata"},
                                     source="127.0.0.3")
        assert status == 503 and headers["retry-after"] == "30" and "as many questions as it can" in body["detail"]
        held.release.set()
        for reader in readers:
            reader.join(PATIENCE)
    finally:
        held.release.set()
        service.stop()
    assert [reader.named("final")[0]["query"] for reader in readers] == [QUERY] * 4


def test_stop_ends_the_question_and_frees_the_worker(browser, llm_server, wikidata_store, tmp_path):
    llm = llm_server(scripted)
    service = start_serve(llm.base_url, {"wikidata": wikidata_store}, tmp_path, options=("--workers", "1"))
    try:
        open_page(browser, service)
        ask(browser, "endless question")
        wait_for(lambda: browser.evaluate("document.querySelectorAll('#log .step').length") >= 2, PATIENCE,
                 "two steps shown")
        browser.evaluate("document.querySelector('#log button.stop').click()")
        wait_done(browser, 1)
        wait_for(lambda: "run stopped (its asker stopped it" in service.log.read_text(), PATIENCE, "the run's end")
        asked = len(llm.requests)
        ask(browser, "quick question after the stop")  # the one worker is free again
        wait_done(browser, 2)
    finally:
        log = service.stop()
    assert turn(browser, 0)["failed"] == ["Stopped, as you asked."]
    assert turn(browser, 1)["query"] == [QUERY] and len(llm.requests) == asked + 2
    assert "stopped by its asker" in log


def test_after_a_stop_the_next_question_waits_for_the_model_server_to_be_idle(browser, llm_server, wikidata_store,
                                                                            tmp_path):
    """A local server serves one completion at a time and goes on generating a reply whose request was closed (as
    llama-cpp-python's does): the next question is sent only once it says it is idle again (``GET /models``)."""
    endless = EndlessReply(ToolCallReply("stop", {"thought": "", "explanation": "Too late.", "language": "en"}))
    llm = llm_server(lambda body: endless if _question(body).startswith("generating") else scripted(body),
                     one_at_a_time=True)
    service = start_serve(llm.base_url, {"wikidata": wikidata_store}, tmp_path, options=("--workers", "1"))
    try:
        open_page(browser, service)
        ask(browser, "generating question")
        wait_for(endless.arrived.is_set, PATIENCE, "the model generating")
        browser.evaluate("document.querySelector('#log button.stop').click()")
        wait_done(browser, 1)
        wait_for(lambda: "run stopped (its asker stopped it; its model request closed)" in service.log.read_text(),
                 PATIENCE, "the run's end")
        lists = llm.model_lists
        ask(browser, "quick question after the stop")
        endless.release.set()  # the closed request's generation ends: only now does the server answer
        wait_done(browser, 2)
    finally:
        endless.release.set()
        log = service.stop()
    assert turn(browser, 1)["query"] == [QUERY]
    assert llm.model_lists == lists + 1, "the next question was sent without asking whether the server was idle"
    assert "the model endpoint answered again after a wait of" in log


def test_the_answer_comes_first_with_labels_and_its_steps_fold(browser, service):
    open_page(browser, service)
    ask(browser, "labels of the cities")
    wait_done(browser, 1)
    shown = browser.evaluate("""(() => {
        const turn = document.querySelector('#log .turn');
        const answer = turn.querySelector('.answer');
        const steps = turn.querySelector('details.steps-box');
        return {order: [...answer.children].map((node) => node.className),
                answerBeforeSteps: !!(answer.compareDocumentPosition(steps) & Node.DOCUMENT_POSITION_FOLLOWING),
                open: steps.open, summary: steps.querySelector('summary').textContent,
                preview: [...answer.querySelectorAll('.preview td')].map((cell) => cell.textContent),
                header: [...answer.querySelectorAll('.preview th')].map((cell) => cell.textContent),
                stepCells: [...steps.querySelectorAll('.step td')].map((cell) => cell.textContent),
                unseen: [...steps.querySelectorAll('.step .unseen')].map((line) => line.textContent),
                steps: [...steps.querySelectorAll('.step')].map((step) => step.textContent),
                wide: document.documentElement.scrollWidth > document.documentElement.clientWidth};
    })()""")
    assert shown["order"][:3] == ["explanation", "query", "tools"], shown["order"]
    assert shown["order"][3].endswith("preview") and shown["answerBeforeSteps"]
    assert not shown["open"] and shown["summary"] == "Steps (1)", "the last step, a stop that says nothing, shows"
    assert shown["header"] == ["city"] and shown["preview"] == ["Q72 (Zurich)"]
    assert shown["stepCells"] == ["Q72 (Zurich)"], "the step's table is not the result's rows"
    assert shown["unseen"] == ["IDs new to this run (check them): Q72"] and not shown["wide"]
    browser.evaluate("document.querySelector('#log summary').click()")
    assert browser.evaluate("document.querySelector('#log details').open")


def test_the_graphs_own_tool_names_show_in_the_steps(browser, service):
    open_page(browser, service)
    browser.evaluate("document.getElementById('graph').value = 'library'")
    ask(browser, "search the library for Dune")
    wait_done(browser, 1)
    actions = browser.evaluate("[...document.querySelectorAll('#log .step .action')].map((line) => line.textContent)")
    assert actions == ["search_graph(Dune)", "execute_sparql:"], actions


def test_copy_puts_the_query_on_the_clipboard_or_selects_it(browser, service):
    open_page(browser, service)
    ask(browser, "quick question to copy")
    wait_done(browser, 1)
    browser.call("Browser.grantPermissions", origin=service.base,
                 permissions=["clipboardReadWrite", "clipboardSanitizedWrite"])
    browser.call("Emulation.setFocusEmulationEnabled", enabled=True)  # a headless page never has the focus
    browser.evaluate("document.querySelector('#log button.copy').click()")
    wait_for(lambda: browser.evaluate("document.querySelector('#log .copied').textContent"), PATIENCE, "a word")
    assert browser.evaluate("document.querySelector('#log .copied').textContent") == "Copied."
    assert browser.evaluate("navigator.clipboard.readText()") == QUERY
    browser.call("Browser.resetPermissions")
    browser.call("Emulation.setFocusEmulationEnabled", enabled=False)
    # Without the Clipboard API (an older browser, a page not served securely) the query is selected instead.
    browser.evaluate("""(() => {
        Object.defineProperty(navigator, 'clipboard', {value: undefined, configurable: true});
        document.querySelector('#log .copied').textContent = '';
        document.querySelector('#log button.copy').click();
        return true;
    })()""")
    wait_for(lambda: browser.evaluate("document.querySelector('#log .copied').textContent"), PATIENCE, "a word")
    assert browser.evaluate("window.getSelection().toString()") == QUERY
    assert browser.evaluate("document.querySelector('#log .copied').textContent").startswith("Selected")


def _link(browser) -> str:
    return browser.evaluate("location.href")


def visit(browser, url: str) -> None:
    """Open *url* as a new page load (a link opened, a reload), never as a jump within the page already open."""
    browser.call("Page.navigate", url="about:blank")
    wait_for(lambda: browser.evaluate("location.href") == "about:blank", PATIENCE, "a blank page")
    browser.open(url, "document.body.dataset.ready === 'true'")


def test_a_conversation_link_survives_a_reload_a_restart_and_can_be_shared(browser, another_browser, llm_server,
                                                                          wikidata_store, tmp_path):
    llm = llm_server(scripted)
    kept = tmp_path / "state" / "conversations.sqlite"
    options = ("--conversations", str(kept))
    service = start_serve(llm.base_url, {"wikidata": wikidata_store}, tmp_path, options=options)
    try:
        open_page(browser, service)
        ask(browser, "quick question to keep")
        wait_done(browser, 1)
        link = _link(browser)
        assert re.fullmatch(re.escape(service.base) + r"/#c=[A-Za-z0-9_-]{20,}", link), link
        visit(browser, link)
        again = turn(browser, 0)
        assert again["query"] == [QUERY] and again["explanation"] == ["Two cities."] and "Geneva" in again["preview"][0]
        assert again["steps"][0].startswith("1. A look.")
        assert browser.evaluate("document.getElementById('graph').disabled")
        ask(browser, "revise it after the reload")  # the asker continues where the conversation was
        wait_done(browser, 2)
        follow_up = [body for body in llm.requests if _question(body).startswith("revise it after")][0]
        assert QUERY in follow_up["messages"][1]["content"], "the follow-up lost the conversation"
        assert _link(browser) == link
    finally:
        service.stop()
    service = start_serve(llm.base_url, {"wikidata": wikidata_store}, tmp_path, options=options)
    try:
        shared = link.replace(link.split("/#")[0], service.base)  # the same link, on the restarted server's port
        visit(another_browser, shared)
        questions = another_browser.evaluate(
            "[...document.querySelectorAll('#log .question')].map((q) => q.textContent)")
        assert questions == ["quick question to keep", "revise it after the reload"]
        assert turn(another_browser, 1)["query"] == [REVISED]
        visit(another_browser, service.base + "/#c=nobody-was-given-this-one")
        notice = another_browser.evaluate("document.querySelector('#log .notice').textContent")
        assert notice.startswith("This conversation link is unknown to the server")
        assert another_browser.evaluate("location.hash") == ""
        ask(another_browser, "quick fresh start")
        wait_done(another_browser, 1)
        assert turn(another_browser, 0)["query"] == [QUERY]
    finally:
        service.stop()


def test_a_reload_follows_the_question_in_flight_without_asking_it_again(browser, llm_server, wikidata_store,
                                                                        tmp_path):
    service, held = held_service(llm_server, wikidata_store, tmp_path)
    try:
        open_page(browser, service)
        ask(browser, "held question across a reload")
        wait_for(held.arrived.is_set, PATIENCE, "the question's second step held at the model")
        wait_for(lambda: browser.evaluate("document.querySelectorAll('#log .step').length") == 1, PATIENCE,
                 "the first step shown")
        visit(browser, _link(browser))
        wait_for(lambda: browser.evaluate("document.querySelectorAll('#log .step').length") == 1, PATIENCE,
                 "the first step shown again after the reload")
        assert browser.evaluate(STATUS) == "The agent is exploring the graph…"
        held.release.set()
        wait_done(browser, 1)
    finally:
        held.release.set()
        log = service.stop()
    shown = turn(browser, 0)
    assert shown["query"] == [QUERY] and len(shown["steps"]) == 1
    asked = [body for body in service.llm.requests if _question(body) == "held question across a reload"]
    assert [_calls(body) for body in asked] == [0, 1], "the question was asked again after the reload"
    assert "cancelled" not in log


def test_one_persons_line_does_not_hold_back_another_persons_question(llm_server, wikidata_store, tmp_path):
    service, held = held_service(llm_server, wikidata_store, tmp_path, ("--workers", "2", "--per-client", "1"))
    try:
        first = line_up(service.base, "held question")
        wait_for(held.arrived.is_set, PATIENCE, "the first question holding a worker")
        second = line_up(service.base, "quick second of the same person")
        wait_for(lambda: second.named("queued"), PATIENCE, "the person's second question in line")
        other = line_up(service.base, "quick question of another person", source="127.0.0.2")
        other.join(PATIENCE)  # answered on the free worker while the first person's question still runs
        assert other.named("final")[0]["query"] == QUERY and not other.named("queued")
        assert not first.named("final") and not second.named("started")
        held.release.set()
        first.join(PATIENCE)
        second.join(PATIENCE)
    finally:
        held.release.set()
        service.stop()
    assert second.named("queued") == [{"position": 1}] and second.named("final")[0]["query"] == QUERY
