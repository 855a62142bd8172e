"""The chat page's engines' line, in headless Chromium: ``spinach-serve`` answers about live Wikidata with the query
service and QLever configured (two real SPARQL servers on loopback, QLever's copy forty days old and its front
refusing as QLever does), and the page says what each found, links "Try it" on each, dates each one's data and
names the old copy; an engine's hostile error body stays text.
"""

from __future__ import annotations

from datetime import timezone
from typing import Any

import pytest

from agent.kb.base import CrossCheck, DataDate, Engine, EngineOutcome, EngineRun
from agent.query_service import QUERY_SERVICE
from serve.events import engines_event
from serve.graphs import LIVE
from tests.support.fault_proxy import Fault, Reply
from tests.support.llm_server import ToolCallReply
from tests.support.serve_rig import start_serve
from tests.support.sparql_endpoint import qlever_error
from tests.support.two_engines import DIFFERENT_QUERY, EQUAL_QUERY, MWAPI_QUERY
from tests.serve.test_chat import ask, open_page, wait_done
from tests.support.llm_server import asked_question as _question, steps_so_far as _calls

pytestmark = pytest.mark.xdist_group("two_engines")
QUESTIONS = {"Where was Douglas Adams educated?": EQUAL_QUERY, "Which humans are there?": DIFFERENT_QUERY,
             "Who is named Adams?": MWAPI_QUERY}
QLEVER_UI = "https://qlever.dev/wikidata/?query="
#: An engine's error body with markup of every kind the page could be tricked into reading.
HOSTILE = ("<img src=x onerror=alert(1)> <script>alert(2)</script> </nowiki> [[Category:Spam]] {{Q|Q1}} ~~~~ "
           "<a href=javascript:alert(3)>x</a> &lt;b&gt;")
#: The engines' box of a turn: its line, each engine's item, its links, and every element's tag.
ENGINES = """((index) => {
  const box = document.querySelectorAll('#log .turn')[index].querySelector('.engines');
  if (!box) return null;
  const found = box.querySelector('.engines-found');
  const posted = box.querySelector('.posted-for');
  return {found: found ? found.textContent : "", items: [...box.querySelectorAll('li')].map((li) => li.textContent),
          links: [...box.querySelectorAll('a')].map((a) => [a.textContent, a.href]),
          posted: posted ? posted.textContent : "", tags: [...new Set([...box.querySelectorAll('*')].map(
            (element) => element.tagName))].sort(), alerted: window.alerted};
})(%d)"""


def scripted(body: dict[str, Any]):
    """The model: the question's query, then a stop."""
    query = QUESTIONS[_question(body)]
    if _calls(body) == 0:
        return ToolCallReply("execute_sparql", {"thought": "Ask the engines.", "sparql": query})
    return ToolCallReply("stop", {"thought": "That answers it.", "explanation": "Found it.", "language": "en"})


@pytest.fixture
def service(llm_server, wikidata_server, two_engines, tmp_path, monkeypatch):
    """The server as an operator starts it for live Wikidata, with both engines and a threshold of 30 days."""
    monkeypatch.setenv("WIKIDATA_API_URL", wikidata_server().api_url)
    monkeypatch.setenv("WIKIDATA_ENGINES", two_engines.setting)
    monkeypatch.setenv("WIKIDATA_STALE_AFTER_DAYS", "30")
    started = start_serve(llm_server(scripted).base_url, {"wikidata": LIVE}, tmp_path, options=("--timeout", "60"))
    yield started
    started.stop()


def asked(browser, service, question: str) -> dict[str, Any]:
    open_page(browser, service)
    ask(browser, question)
    wait_done(browser, 1)
    return browser.evaluate(ENGINES % 0)


def day(front) -> str:
    """The front's data date as the page writes it."""
    moment = front.date.astimezone(timezone.utc)
    return f"{moment.day} {moment.strftime('%B')} {moment.year}"


@pytest.mark.parametrize(("question", "found"), [
    ("Where was Douglas Adams educated?", "1 result on the query service, 1 on QLever."),
    ("Which humans are there?", "3 results on the query service; QLever found 3, 1 of them not on the query service."),
    ("Who is named Adams?", "1 result on the query service; QLever does not support"),
])
def test_the_page_says_what_each_engine_found_links_each_and_names_the_old_copy(browser, service, two_engines,
                                                                               question, found):
    shown = asked(browser, service, question)
    assert shown["found"].startswith(found)
    wdqs = f"the query service: Try it on the query service · data as of {day(two_engines.wdqs)}"
    stale = f"data as of {day(two_engines.qlever)}, older than 30 days"
    unsupported = "QLever does not support" in found
    assert shown["items"] == [wdqs, f"QLever: {'cannot run it' if unsupported else 'Try it on QLever'} · {stale}"]
    assert [label for label, _ in shown["links"]] == ["Try it on the query service"] + (
        [] if unsupported else ["Try it on QLever"])
    assert shown["links"][0][1].startswith(QUERY_SERVICE)
    assert all(href.startswith(QLEVER_UI) for label, href in shown["links"][1:])
    assert set(shown["tags"]) <= {"P", "OL", "LI", "SPAN", "A"} and shown["posted"] == ""


def test_a_hostile_qlever_error_body_shows_as_text(browser, service, two_engines):
    two_engines.qlever.proxy.add(Fault("hostile", lambda path, params: "wd:Q5" in params.get("query", ""),
                                       Reply(400, qlever_error("x", HOSTILE), {"Content-Type": "application/json"})))
    shown = asked(browser, service, "Which humans are there?")
    assert two_engines.qlever.proxy.fired == ["hostile"]
    assert f"QLever refused the query: {HOSTILE}" in shown["found"], shown["found"]
    assert set(shown["tags"]) <= {"P", "OL", "LI", "SPAN", "A"} and not shown["alerted"]
    assert [label for label, _ in shown["links"]] == ["Try it on the query service"]


def test_the_answers_data_carries_each_engines_facts_and_only_web_links():
    from datetime import datetime
    engine = Engine("evil", "Evil\u202e", "http://127.0.0.1:9/sparql", "qlever", "javascript:")
    check = CrossCheck((EngineRun(engine, EngineOutcome.TIMEOUT, reason="x\x00y"),
                        EngineRun(engine, EngineOutcome.ANSWERED, 2, try_link="javascript:alert(1)",
                                  data_date=DataDate(datetime(2026, 5, 3, tzinfo=timezone.utc), "index date"))),
                       stale=("evil",))
    event = engines_event(check, 30)
    assert [run["try_it"] for run in event["runs"]] == [None, None]
    assert event["runs"][0]["engine"] == "Evil" and event["runs"][0]["reason"] == "xy"
    assert event["runs"][1] | {"try_it": None} == {
        "key": "evil", "engine": "Evil", "outcome": "answered", "rows": 2, "difference": None, "reason": "",
        "try_it": None, "data_date": "2026-05-03", "data_source": "index date", "stale": True}
    assert engines_event(None) is None
