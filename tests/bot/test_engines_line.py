"""The reply's engines' line as a reader sees it on the real MediaWiki: what each engine found (the same, fewer,
not supported, timed out), a "Try it" link per engine, how fresh each one's data is, and a stale copy named.

Each reply is rendered from a run whose cross-check is built here (the data the run hands the reply), saved on the
real wiki as a human's edit would be, and read back from MediaWiki's own parse: the words a reader sees, the
links they can follow, and nothing else (no category, template, link or heading brought by an engine's error).
"""

from __future__ import annotations

import html
import re
import urllib.parse
from datetime import datetime, timezone
from html.parser import HTMLParser

import pytest

from agent.kb.base import CrossCheck, DataDate, Engine, EngineOutcome, EngineRun
from agent.trace import AgentResult, Step, Usage
from agent.query_service import QUERY_SERVICE
from agent.text import clean
from bot.config import BotConfig
from agent.engines_text import REASON_CHARS, safe_url, written_date
from agent.messages import MESSAGES
from bot.render import Markup, render_reply
from tests.support.bot_rig import BotRig
from tests.support.fault_proxy import Fault, Reply
from tests.support.sparql_endpoint import qlever_error
from tests.support.two_engines import DIFFERENT_QUERY, EQUAL_QUERY, MWAPI_QUERY
from tests.bot.test_render import STRIP_MARKER, save_and_read
from tests.bot.test_scenarios import policy
from tests.support.forum_text import new_section

pytestmark = pytest.mark.mediawiki
QUERY = "SELECT ?human WHERE { ?human wdt:P31 wd:Q5 ; wdt:P69 wd:Q11942 . }"
QLEVER_UI = "https://qlever.cs.uni-freiburg.de/wikidata/?query="
#: Where the configured QLever's page is (agent.kb.engines.QLEVER.try_url).
QLEVER_LIVE_UI = "https://qlever.dev/wikidata/?query="
#: A busy answer outlasts the client's tries of one query: the first and its 4 retries.
EVERY_TRY = 5
WDQS = Engine("wdqs", "the query service", "http://127.0.0.1:1/sparql", "wdqs", QUERY_SERVICE)
QLEVER = Engine("qlever", "QLever", "http://127.0.0.1:2/sparql", "qlever", QLEVER_UI)
FRESH = DataDate(datetime(2026, 11, 28, 6, 30, tzinfo=timezone.utc), "schema:dateModified")
RECENT = DataDate(datetime(2026, 11, 27, 23, 0, tzinfo=timezone.utc), "index date")
OLD = DataDate(datetime(2026, 5, 3, tzinfo=timezone.utc), "index date")
#: An engine's error body as a hostile endpoint could send it: wikitext, HTML, an extension tag's end, a strip
#: marker, a category, a template, a signature.
HOSTILE_REASON = ("</nowiki> '''bold''' <b>x</b> [[Category:Spam]] {{Q|Q1}} {{subst:PAGENAME}} ~~~~ __NOTOC__ "
                  "[https://spam.example link] <!-- " + STRIP_MARKER + " -{zh}- &lt;")

#: Tags that start or end a line a reader sees: read as a space between the words on either side.
BLOCK_TAG = re.compile(r"</?(?:dd|dl|dt|p|div|br|li|ul|ol|h\d|table|tr|td|th|pre)\b[^>]*>")


def link(engine: Engine, query: str = QUERY) -> str:
    """The query as *engine*'s page opens it (the producing side's ``try_link``)."""
    return engine.try_url + urllib.parse.quote(query, safe="")


def answered(engine: Engine, rows: int, data_date: DataDate | None = FRESH) -> EngineRun:
    return EngineRun(engine, EngineOutcome.ANSWERED, rows, try_link=link(engine), data_date=data_date)


def run_with(check: CrossCheck | None, language: str = "en", rows: int = 12) -> AgentResult:
    answer = [{"human": {"type": "uri", "value": f"http://www.wikidata.org/entity/Q{n}"}} for n in range(1, rows + 1)]
    steps = [Step("Humans educated at ETH Zurich.", "execute_sparql", QUERY, "human\nQ1")]
    return AgentResult("Who studied at ETH Zurich?", QUERY, answer, ["human"], steps, "stop",
                       "These are the people educated at ETH Zurich.", Usage(llm_calls=2), language=language,
                       cross_check=check)


class Links(HTMLParser):
    """The external links of a rendered page: (address, what the reader sees of it)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []
        self._open: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        found = dict(attrs)
        if tag == "a" and "external" in (found.get("class") or ""):
            self._open = [found.get("href") or ""]
            self.found.append(("", ""))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.found[-1] = (self._open[0], "".join(self._open[1:]))
            self._open = None


def seen(mediawiki, title: str, reply: str) -> tuple[str, list[tuple[str, str]], dict]:
    """*reply* saved under a question on the real wiki: the text a reader sees (one line of words), the external
    links (address, label) and MediaWiki's parse."""
    page = f"== {title} ==\nWho studied at ETH Zurich? [[User:Alice|Alice]] 10:00, 1 January 2026 (UTC)\n" + reply
    save_and_read(mediawiki, f"Engines {title}", page)
    return read(mediawiki, f"Engines {title}")


def read(mediawiki, title: str) -> tuple[str, list[tuple[str, str]], dict]:
    """The page *title* as a reader meets it: its words (one line), its external links (address, label) and
    MediaWiki's parse."""
    parsed = mediawiki.api(action="parse", page=title, disablelimitreport="1",
                           prop="text|links|templates|externallinks|categories|sections|properties")["parse"]
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", BLOCK_TAG.sub(" ", parsed["text"]))).split())
    links = Links()
    links.feed(parsed["text"])
    return text, [(html.unescape(href), label) for href, label in links.found], parsed


def assert_nothing_added(parsed: dict, before: dict | None = None) -> None:
    """The page holds only what the reply itself writes beside what it held *before* (by default nothing but the
    question's heading): no category, heading, template or wiki link of an engine's."""
    def held(key: str, name: str) -> set[str]:
        return {item[name] for item in before[key]} if before else set()

    assert {item["*"] if "*" in item else item["category"] for item in parsed["categories"]} == held(
        "categories", "category")
    assert [section["line"] for section in parsed["sections"]] == (
        [section["line"] for section in before["sections"]] if before else [parsed["sections"][0]["line"]])
    assert {item["title"] for item in parsed["templates"]} - held("templates", "title") <= {
        "Template:SPARQL", "Template:Q", "Template:Re"}
    assert {item["title"] for item in parsed["links"]} - held("links", "title") <= {
        "User:Alice", "User talk:Alice", "User:SpinachBot", "User talk:SpinachBot"}


CASES = {
    "equal": (CrossCheck((answered(WDQS, 12), answered(QLEVER, 12, RECENT))),
              "12 results on the query service, 12 on QLever. Try it on the query service (data as of 28 November "
              "2026), Try it on QLever (data as of 27 November 2026).",
              [("Try it on the query service", link(WDQS)), ("Try it on QLever", link(QLEVER))]),
    "fewer": (CrossCheck((answered(WDQS, 12), answered(QLEVER, 10, RECENT))),
              "12 results on the query service; QLever found 10, 2 fewer. Try it on the query service",
              [("Try it on the query service", link(WDQS)), ("Try it on QLever", link(QLEVER))]),
    "unsupported": (CrossCheck((answered(WDQS, 12), EngineRun(
        QLEVER, EngineOutcome.UNSUPPORTED, reason="QLever does not support SERVICE wikibase:label",
        data_date=RECENT))),
        "12 results on the query service; QLever does not support SERVICE wikibase:label. Try it on the query "
        "service (data as of 28 November 2026), QLever: data as of 27 November 2026.",
        [("Try it on the query service", link(WDQS))]),
    "timeout": (CrossCheck((answered(WDQS, 12), EngineRun(QLEVER, EngineOutcome.TIMEOUT))),
                "12 results on the query service; QLever timed out. Try it on the query service (data as of 28 "
                "November 2026).",
                [("Try it on the query service", link(WDQS))]),
    "stale": (CrossCheck((answered(WDQS, 12), answered(QLEVER, 12, OLD)), stale=("qlever",)),
              "12 results on the query service, 12 on QLever. Try it on the query service (data as of 28 November "
              "2026), Try it on QLever. QLever's data is from 3 May 2026, older than 30 days.",
              [("Try it on the query service", link(WDQS)), ("Try it on QLever", link(QLEVER))]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_reply_says_under_its_query_what_each_engine_found_and_links_each(mediawiki, case):
    check, line, engine_links = CASES[case]
    reply = render_reply(run_with(check), stale_after_days=30)
    lines = reply.splitlines()
    below = lines.index("}}") + 1  # the {{SPARQL}} template's last line
    assert "on the query service" in lines[below], "the engines' line stands right under the query"
    text, links, parsed = seen(mediawiki, case, reply)
    assert line in text
    assert [(label, href) for href, label in links if label.startswith("Try it on")] == engine_links
    assert_nothing_added(parsed)


def test_without_a_cross_check_the_reply_is_as_before(mediawiki):
    reply = render_reply(run_with(None), stale_after_days=30)
    text, links, parsed = seen(mediawiki, "none", reply)
    assert "on the query service" not in text and "data as of" not in text and "QLever" not in text
    assert [label for _, label in links] == ["Try it!"]  # the {{SPARQL}} template's own link
    assert "on the query service" not in render_reply(run_with(None), markup=Markup.LINKS)


def test_a_query_the_main_engine_cannot_run_is_posted_for_the_engine_that_ran_it(mediawiki):
    check = CrossCheck((EngineRun(WDQS, EngineOutcome.TIMEOUT, reason="java.util.concurrent.TimeoutException",
                                  data_date=FRESH), answered(QLEVER, 12, RECENT)))
    text, links, parsed = seen(mediawiki, "fallback", render_reply(run_with(check)))
    assert ("The query service timed out: java.util.concurrent.TimeoutException; 12 results on QLever. The query "
            "service: data as of 28 November 2026, Try it on QLever (data as of 27 November 2026). The query service "
            "cannot run it, so the query above is the one for QLever.") in text
    # The query's own link opens QLever, not the query service that gave up on it; no {{SPARQL}} links it there.
    assert [(label, href) for href, label in links] == [("Try it on QLever", link(QLEVER))] * 2
    assert "Template:SPARQL" not in {item["title"] for item in parsed["templates"]}
    assert QUERY.replace(" ", "") in text.replace(" ", "")


def test_the_line_is_in_the_askers_language(mediawiki):
    check = CrossCheck((answered(WDQS, 12), answered(QLEVER, 10, OLD)), stale=("qlever",))
    text, _, _ = seen(mediawiki, "german", render_reply(run_with(check, "de"), stale_after_days=30))
    assert ("The query service: 12 Ergebnisse; QLever: 10, 2 weniger. Ausprobieren: the query service (Datenstand "
            "28. November 2026), Ausprobieren: QLever. Die Daten von QLever stammen vom 3. Mai 2026, älter als "
            "30 Tage.") in text
    text, _, _ = seen(mediawiki, "french", render_reply(run_with(check, "fr"), stale_after_days=1))
    assert "Les données de QLever datent du 3 mai 2026, soit plus de 1 jour." in text


def test_an_engines_hostile_error_body_name_and_link_show_as_plain_text(mediawiki):
    hostile, another = (Engine(key, "Evil '' [[Category:Spam]] {{Q|Q1}} ~~~~", "http://127.0.0.1:3/sparql", "qlever",
                               "https://evil.example/?q=") for key in ("evil", "evil-too"))
    check = CrossCheck((answered(WDQS, 12),
                        EngineRun(another, EngineOutcome.FAILED, reason=HOSTILE_REASON),
                        EngineRun(hostile, EngineOutcome.ANSWERED, 3, data_date=OLD,
                                  try_link="https://evil.example/?q=' ]] [[Category:Spam]] ~~~~ __NOTOC__ {{x}}")),
                       stale=("evil",))
    reply = render_reply(run_with(check), stale_after_days=30)
    text, links, parsed = seen(mediawiki, "hostile", reply)
    assert_nothing_added(parsed)
    assert "\x7f" not in reply and "<b>" not in reply and parsed["properties"] in ([], {})
    name = "Evil '' [[Category:Spam]] {{Q|Q1}} ~~~~"
    reason = " ".join(clean(HOSTILE_REASON).split())[:REASON_CHARS - 1]
    assert f"{name} refused the query: {reason}…; {name} found 3, 9 fewer." in text
    assert f"{name}'s data is from 3 May 2026, older than 30 days." in text
    [(href, label)] = [(href, label) for href, label in links if label.startswith("Try it on Evil")]
    assert label == f"Try it on {name}"
    assert urllib.parse.unquote(href) == "https://evil.example/?q=' ]] [[Category:Spam]] ~~~~ __NOTOC__ {{x}}"


def test_only_a_web_address_becomes_a_link():
    assert safe_url("javascript:alert(1)") == "" and safe_url("https:///x") == "" and safe_url("x y") == ""
    assert safe_url("https://a.example/?q=a_b~c'&lt;d") == "https://a.example/?q=a%5Fb%7Ec%27&lt%3Bd"


def test_the_threshold_is_a_setting_of_bot_ini(tmp_path):
    assert BotConfig().stale_after_days == 2
    ini = tmp_path / "bot.ini"
    ini.write_text("[bot]\nstale_after_days = 30\n")
    assert BotConfig.from_file(ini).stale_after_days == 30
    ini.write_text("[bot]\nstale_after_days = -1\n")
    with pytest.raises(ValueError, match="stale_after_days: -1.0 is not a number of days"):
        BotConfig.from_file(ini)


def test_one_engine_adds_only_its_data_date_and_staleness(mediawiki):
    text, links, _ = seen(mediawiki, "one engine", render_reply(run_with(CrossCheck((answered(WDQS, 12),)))))
    assert "Data as of 28 November 2026." in text and "on the query service" not in text
    assert [label for _, label in links] == ["Try it!"]
    stale = CrossCheck((answered(WDQS, 12, OLD),), stale=("wdqs",))
    text, _, _ = seen(mediawiki, "one stale engine", render_reply(run_with(stale), stale_after_days=2))
    assert "The query service's data is from 3 May 2026, older than 2 days." in text and "Data as of" not in text


# -- end to end: the bot on the real wiki, its final query on two real SPARQL servers ----------------------------

QUESTIONS = {"equal": ("Where was Douglas Adams educated?", EQUAL_QUERY),
             "different": ("Which humans are there?", DIFFERENT_QUERY),
             "unsupported": ("Who is named Adams?", MWAPI_QUERY)}


def bot_reply(mediawiki, rig: BotRig, case: str, name: str) -> tuple[str, str, list[tuple[str, str]], dict]:
    """The bot's reply (wikitext) to the *case*'s question in a fresh forum *name*, and what a reader sees of it;
    the page shows no heading the reply brought."""
    forum = mediawiki.fresh_forum(name)
    question = QUESTIONS[case][0]
    assert rig.run(forum, "--once", "--live").code == 0
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section(case.title(), question))
    before = read(mediawiki, forum)[2]
    done = rig.run(forum, "--once", "--live")
    assert done.code == 0 and len(rig.bot_edits(forum)) == 1, done.stderr[-3000:]
    reply = mediawiki.page_text(forum).split(question, 1)[1].split("\n", 1)[1]
    text, links, parsed = read(mediawiki, forum)
    assert_nothing_added(parsed, before)
    return reply, text, links, parsed


@pytest.fixture
def engines_rig(mediawiki, llm_server, wikidata_server, two_engines, tmp_path, monkeypatch, request):
    """The bot as an operator runs it with the query service and QLever configured (two real servers on loopback,
    QLever's copy forty days old) and bot.ini's threshold of 30 days; its model runs the case's query and stops."""
    case = request.param
    monkeypatch.setenv("WIKIDATA_ENGINES", two_engines.setting)
    (tmp_path / "bot.ini").write_text("[bot]\nstale_after_days = 30\n")
    rig = BotRig(mediawiki, tmp_path, llm_server(policy("Ask both engines.", QUESTIONS[case][1])),
                 wikidata_server())
    return case, rig


@pytest.mark.xdist_group("two_engines")
@pytest.mark.parametrize("engines_rig", list(QUESTIONS), indirect=True)
def test_the_bots_reply_says_what_the_query_service_and_qlever_found_and_names_the_old_copy(mediawiki, engines_rig,
                                                                                          two_engines):
    case, rig = engines_rig
    words = MESSAGES["en"]
    now, then = (written_date(front.date.astimezone(timezone.utc).date(), words)
                 for front in (two_engines.wdqs, two_engines.qlever))
    found = {"equal": "1 result on the query service, 1 on QLever.",
             "different": "3 results on the query service; QLever found 3, 1 of them not on the query service.",
             "unsupported": "1 result on the query service; QLever does not support"}[case]
    reply, text, links, parsed = bot_reply(mediawiki, rig, case, f"engines {case}")
    assert found in text
    assert f"Try it on the query service (data as of {now})" in text
    assert f"QLever's data is from {then}, older than 30 days." in text
    tried = [href for href, label in links if label.startswith("Try it on")]
    assert [label for _, label in links if label.startswith("Try it on")] == (
        ["Try it on the query service"] + ([] if case == "unsupported" else ["Try it on QLever"]))
    assert all(href.startswith((QUERY_SERVICE, QLEVER_LIVE_UI)) for href in tried)


@pytest.mark.xdist_group("two_engines")
@pytest.mark.parametrize("engines_rig", ["different"], indirect=True)
def test_a_hostile_qlever_error_body_reaches_the_reply_as_plain_text(mediawiki, engines_rig, two_engines):
    case, rig = engines_rig
    two_engines.qlever.proxy.add(Fault("hostile", lambda path, params: "wd:Q5" in params.get("query", ""),
                                       Reply(400, qlever_error("x", HOSTILE_REASON),
                                             {"Content-Type": "application/json"})))
    reply, text, links, parsed = bot_reply(mediawiki, rig, case, "engines hostile")
    assert two_engines.qlever.proxy.fired == ["hostile"]
    assert "\x7f" not in reply and parsed["properties"] in ([], {})
    shown = "</nowiki> '''bold''' <b>x</b> [[Category:Spam]] {{Q|Q1}} {{subst:PAGENAME}} ~~~~ __NOTOC__"
    assert f"3 results on the query service; QLever refused the query: {shown}" in text


@pytest.mark.xdist_group("two_engines")
@pytest.mark.parametrize("engines_rig", ["different"], indirect=True)
def test_a_query_the_busy_query_service_cannot_run_is_posted_for_qlever(mediawiki, engines_rig, two_engines):
    case, rig = engines_rig
    busy = Fault("busy", lambda path, params: "wd:Q5" in params.get("query", ""),
                 Reply(429, "Too Many Requests", {"Retry-After": "0", "Content-Type": "text/plain"}),
                 times=EVERY_TRY + 1)  # the run's query and its retries, then the cross-check's one request
    two_engines.wdqs.proxy.add(busy)
    reply, text, links, parsed = bot_reply(mediawiki, rig, case, "engines fallback")
    assert busy.fired == EVERY_TRY + 1
    assert "The query below finds 3 results" in text
    assert "The query service was busy (HTTP 429); 3 results on QLever." in text
    assert "The query service cannot run it, so the query above is the one for QLever." in text
    assert [label for _, label in links if label.startswith("Try it on")] == ["Try it on QLever"] * 2
    assert "{{SPARQL" not in reply  # the template would link the query service


@pytest.mark.xdist_group("two_engines")
@pytest.mark.parametrize("engines_rig", ["equal"], indirect=True)
def test_the_dry_runs_preview_shows_the_same_line(mediawiki, engines_rig, two_engines):
    case, rig = engines_rig
    forum = mediawiki.fresh_forum("engines preview")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Preview", QUESTIONS[case][0]))
    done = rig.run(forum, "--section", "Preview", "--dry-run")
    assert done.code == 0 and rig.bot_edits(forum) == [], done.stderr[-3000:]
    then = written_date(two_engines.qlever.date.astimezone(timezone.utc).date(), MESSAGES["en"])
    assert "1 result on the query service, 1 on QLever." in done.stdout
    assert f"QLever's data is from {then}, older than 30 days." in done.stdout


@pytest.mark.xdist_group("two_engines")
@pytest.mark.parametrize("engines_rig", ["different"], indirect=True)
def test_the_review_pages_draft_shows_the_same_line(mediawiki, engines_rig, two_engines):
    case, rig = engines_rig
    (rig.directory / "bot.ini").write_text("[bot]\nstale_after_days = 30\nreview = true\nreviewers = Carol\n"
                                           "review_page = User:SpinachBot/Engines review\n")
    forum = mediawiki.fresh_forum("engines review")
    assert rig.run(forum, "--once", "--live").code == 0
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Review", QUESTIONS[case][0]))
    done = rig.run(forum, "--once", "--live")
    assert done.code == 0 and rig.bot_edits(forum) == [], done.stderr[-3000:]
    text, links, _ = read(mediawiki, "User:SpinachBot/Engines review")
    assert "3 results on the query service; QLever found 3, 1 of them not on the query service." in text
    assert "older than 30 days." in text
    assert [label for _, label in links if label.startswith("Try it on")] == ["Try it on the query service",
                                                                              "Try it on QLever"]
