"""The bot against a real MediaWiki, run as an operator runs it: ``python -m bot.run``.

The language model and Wikidata are stand-ins on 127.0.0.1 (see tests/support); the wiki, pywikibot,
the signature expansion and the HTML are real.  The bot runs in this process (:mod:`tests.support.bot_rig`),
and as a process of its own where the process is the subject: a signal, the lock, ``-simulate``, what it prints.
"""

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

import pytest

from bot.render import Markup, final_query_wikitext
from tests.support.euler import EULER_ADVISORS_QUERY, euler_entities
from tests.support.forum_text import new_section
from tests.support.bot_rig import PATIENCE, SECRET_KEY, BotRig, Endpoint, LogReader, wait_for
from tests.support.llm_server import ErrorReply, ToolCallReply
from tests.support.loopback import LoopbackServer
from tests.support.mediawiki import BOT_USER, PYWIKIBOT_DIR
from tests.support.paths import ROOT
from tests.support.wikidata_server import select

pytestmark = pytest.mark.mediawiki
HOSTILE = "}} {{ [[Category:Spam]] ~~~~ <script>alert(1)</script> __NOTOC__ </div> <nowiki> == Heading =="


def policy(thought: str = "Ask the query service.", query: str = EULER_ADVISORS_QUERY):
    """A model that runs one query, then stops."""

    def reply(body):
        if "tools" not in body:
            return ErrorReply(400, "no pruning expected")
        steps = sum(message["role"] == "tool" for message in body["messages"])
        if steps == 0:
            return ToolCallReply("execute_sparql", {"thought": thought, "sparql": query})
        return ToolCallReply("stop", {"thought": "That answers it."})

    return reply


@pytest.fixture
def services(llm_server, wikidata_server):
    wikidata = wikidata_server(sparql=lambda query: select(["advisor", "advisorLabel"], [
        {"advisor": "Q124500", "advisorLabel": {"type": "literal", "value": "Johann Bernoulli",
                                                "xml:lang": "en"}}]))
    wikidata.add(*euler_entities())
    return {"wikidata": wikidata, "llm": llm_server(policy())}


def final_sparql(rig: BotRig, heading: str) -> str:
    """The final query of the agent's run for *heading*, as the bot stored it."""
    traces = [json.loads(record.trace) for record in rig.records().values()
              if record.heading == heading and record.trace is not None]
    assert traces, f"no stored run for {heading!r}"
    return traces[-1]["final_sparql"]


def test_only_new_sections_get_one_signed_reply_each(mediawiki, forum, rig):
    first = rig.run(forum, "--once", "--live")
    assert first.code == 0, first.stderr
    assert rig.bot_edits(forum) == []  # the backlog is left alone
    page = mediawiki.page_text(forum)
    page += new_section("Doctoral advisors of Euler", "Who were the doctoral advisors of Leonhard Euler?")
    page += new_section("Please leave me alone", "{{nobots}} A question for humans only.", minute=5)
    mediawiki.edit_as_human(forum, page, "two new questions")

    second = rig.run(forum, "--once", "--live")
    assert second.code == 0, second.stderr
    edits = rig.bot_edits(forum)
    assert len(edits) == 1, second.stderr
    assert edits[0]["comment"].startswith("/* Doctoral advisors of Euler */")
    assert not edits[0]["minor"]
    changes = mediawiki.api(action="query", list="recentchanges", rcprop="flags|title", rcuser=BOT_USER,
                            rclimit="50")["query"]["recentchanges"]
    assert [change["bot"] for change in changes if change["title"] == forum.replace("_", " ")] == [True]
    text = mediawiki.page_text(forum)
    euler = text.split("== Doctoral advisors of Euler ==")[1].split("== Please leave me alone ==")[0]
    final = final_sparql(rig, "Doctoral advisors of Euler")
    assert "wdt:P184" in final and final_query_wikitext(final) in euler
    assert re.search(r"\[\[User:SpinachBot\|SpinachBot\]\] \(\[\[User talk:SpinachBot\|talk\]\]\) "
                     r"\d\d:\d\d, \d+ \w+ \d{4} \(UTC\)", euler)
    assert "~~~~" not in text
    assert text.split("== Please leave me alone ==")[1].count("SpinachBot") == 0
    html = mediawiki.rendered_html(forum)
    links = re.findall(r'href="https://query\.wikidata\.org/#([^"]+)"', html)
    assert urllib.parse.unquote(links[-1].replace("&amp;", "&")) == final
    assert "mw-collapsible mw-collapsed" in html

    third = rig.run(forum, "--once", "--live")
    assert third.code == 0 and len(rig.bot_edits(forum)) == 1


def test_dry_run_prints_the_reply_and_diff_and_edits_nothing(mediawiki, forum, rig):
    rig.run(forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    done = rig.run(forum, "--once", "--dry-run")
    assert done.code == 0, done.stderr
    assert "dry run: nothing was saved" in done.stdout and re.search(r"^\+.*~~~~", done.stdout, re.M)
    # the section is the page's last: the asker's line and the reply's first stay two lines of the diff
    assert re.search(r"^[ -]Who advised Euler\? .*\(UTC\)$", done.stdout, re.M), done.stdout[-2000:]
    assert re.search(r"^\+:\{\{re\|1=Alice\}\} The query below finds", done.stdout, re.M)
    assert "(UTC)+" not in done.stdout
    assert rig.bot_edits(forum) == []
    section = rig.run(forum, "--section", "Euler")  # --section alone is a dry run too
    assert "dry run: nothing was saved" in section.stdout and rig.bot_edits(forum) == []


def test_section_that_does_not_exist_names_close_matches(mediawiki, forum, rig):
    done = rig.run(forum, "--section", "Query timed out")
    assert done.code == 2
    assert "no section titled 'Query timed out'" in done.stderr and "Query times out" in done.stderr


def test_the_stop_page_blocks_every_edit(mediawiki, forum, rig):
    rig.run(forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "stop: the bot posted nonsense", "stop the bot")
    done = rig.run(forum, "--once", "--live")
    assert done.code == 0 and "emergency stop" in done.stderr
    assert f"User:{BOT_USER}/Stop is not empty" in done.stderr and "{username}" not in done.stderr
    assert rig.bot_edits(forum) == []


def test_a_lost_state_write_after_the_save_causes_no_second_reply(mediawiki, forum, rig):
    rig.run(forum, "--once", "--live")
    shutil.copy(rig.state_path(), rig.state_path("before.sqlite"))
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    assert rig.run(forum, "--once", "--live").code == 0
    assert len(rig.bot_edits(forum)) == 1
    # As if the process died after saving and before recording it: the state knows nothing of the answer.
    shutil.copy(rig.state_path("before.sqlite"), rig.state_path())
    assert rig.run(forum, "--once", "--live").code == 0
    assert len(rig.bot_edits(forum)) == 1


def test_a_first_look_cut_short_after_the_answer_was_recorded_leaves_one_record_of_the_section(mediawiki, forum,
                                                                                               rig):
    """Killed after the reply's record and before the page's (the pass's last write): the next first look reads
    the section under another identity (history from the bot's own reply on), and its record follows it."""
    mediawiki.edit_as_human(forum, "Ask here." + new_section("Euler", "Who advised Euler?"), "one question")
    assert rig.run(forum, "--once", "--live", "--backlog").code == 0
    assert len(rig.bot_edits(forum)) == 1
    with sqlite3.connect(rig.state_path()) as connection:  # the page's write, lost
        connection.execute("DELETE FROM pages")
    done = rig.run(forum, "--once", "--live")
    assert done.code == 0, done.stderr
    assert len(rig.bot_edits(forum)) == 1
    euler = [record for record in rig.records().values() if record.heading == "Euler"]
    assert [record.status for record in euler] == ["answered"], (euler, done.stderr[-2000:])
    assert json.loads(euler[0].trace)["final_sparql"]  # the run's record kept, under the new identity


def test_a_human_edit_while_the_agent_works_loses_nothing(mediawiki, forum, rig, llm_server):
    rig.run(forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    answer = policy()
    edited = []

    def edit_then_answer(body):
        if not edited:
            edited.append(True)
            text = mediawiki.page_text(forum)
            text = text.replace("== Paintings by Vermeer", "== Inserted above ==\nNew text by a human.\n\n"
                                                         "== Paintings by Vermeer", 1)
            text += ":A human reply in the same section. [[User:Alice|Alice]] 12:30, 20 November 2026 (UTC)\n"
            mediawiki.edit_as_human(forum, text, "edit while the bot thinks")
        return answer(body)

    done = rig.run(forum, "--once", "--live", llm=llm_server(edit_then_answer))
    assert done.code == 0, done.stderr
    text = mediawiki.page_text(forum)
    assert "New text by a human." in text and ":A human reply in the same section." in text
    assert len(rig.bot_edits(forum)) == 1
    euler = text.split("== Euler ==")[1]
    assert euler.index("A human reply") < euler.index("{{SPARQL|query=")


def test_a_failing_model_is_recorded_and_the_pass_goes_on(mediawiki, forum, rig, llm_server):
    rig.run(forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    broken = llm_server(lambda body: ErrorReply(400, "the model is not available"))
    done = rig.run(forum, "--once", "--live", llm=broken)
    assert done.code == 0, done.stderr
    assert "llm_error" in done.stderr and rig.bot_edits(forum) == []
    assert f"the model endpoint {broken.base_url} failed" in done.stderr  # which endpoint, never its key
    assert re.search(r'pass over .*: failed 1, read 1; failed "Euler", retried later \(llm_error', done.stderr)


def test_hostile_text_stays_inert_on_the_real_wiki(mediawiki, forum, rig, llm_server):
    rig.run(forum, "--once", "--live")
    # The asker quotes the hostile text inertly (raw, it would break the asker's own part of the page);
    # the agent still reads it as the question, and the model and the data echo it raw.
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section(
        "Hostile", "<nowiki>" + HOSTILE.replace("<nowiki>", "") + "</nowiki>"))
    query = 'SELECT ?x WHERE { ?x rdfs:label "' + HOSTILE + '"@en . } # ~~~~ [[Category:Spam]]'
    hostile_model = llm_server(policy(thought=HOSTILE, query=query))
    rig.wikidata.sparql = lambda q: select(["x", "xLabel"], [
        {"x": "Q42", "xLabel": {"type": "literal", "value": HOSTILE, "xml:lang": "en"}}])

    def categories():
        return mediawiki.api(action="parse", page=forum, prop="categories")["parse"]["categories"]

    before_categories = categories()  # the asker's own text is live wikitext; the bot's must add nothing
    before_headings = mediawiki.rendered_html(forum).count("<h2")
    done = rig.run(forum, "--once", "--live", llm=hostile_model)
    assert done.code == 0, done.stderr
    text = mediawiki.page_text(forum)
    reply = text.split("== Hostile ==")[1]
    assert reply.count("[[User:SpinachBot|SpinachBot]]") == 1
    assert "[[User:Alice" not in reply.split("\n", 2)[-1]  # no other signature was expanded
    html = mediawiki.rendered_html(forum)
    assert "<script>alert" not in html
    assert categories() == before_categories
    assert html.count("<h2") == before_headings
    links = re.findall(r'href="https://query\.wikidata\.org/#([^"]+)"', html)
    final = final_sparql(rig, "Hostile")
    assert "Category:Spam" in final
    assert urllib.parse.unquote(links[-1].replace("&amp;", "&")) == final  # "Try it!" runs the final query


def test_the_watcher_answers_on_schedule_and_stops_cleanly_on_sigterm(mediawiki, forum, rig):
    rig.run(forum, "--once", "--live")  # the first look: backlog
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    (rig.directory / "bot.ini").write_text("[bot]\ninterval_minutes = 0.02\nmax_sections_per_pass = 1\n")
    watcher = rig.start(forum, "--live", "--config", str(rig.directory / "bot.ini"))
    log = LogReader(watcher)
    wait_for(lambda: rig.bot_edits(forum), PATIENCE, "the reply", log.death)
    passes = log.count("unchanged")
    wait_for(lambda: log.count("unchanged") >= passes + 3, PATIENCE, "three more passes", log.death)
    watcher.send_signal(signal.SIGTERM)
    watcher.wait(timeout=60)
    stderr = log.close()
    assert watcher.returncode == 0, stderr
    assert "finishing the current section, then stopping" in stderr
    assert len(rig.bot_edits(forum)) == 1, stderr[-3000:]
    assert "'written': 1" in stderr


def test_simulate_with_live_is_a_dry_run_and_loses_no_question(mediawiki, forum, rig):
    rig.run(forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    simulated = rig.run_process(forum, "-simulate", "--once", "--live")
    assert simulated.code == 0, simulated.stderr
    assert "-simulate: this is a dry run" in simulated.stderr and "'written'" not in simulated.stderr
    assert rig.bot_edits(forum) == []
    live = rig.run(forum, "--once", "--live")
    assert live.code == 0 and len(rig.bot_edits(forum)) == 1, live.stderr


def test_a_second_live_process_on_the_same_state_is_refused_clearly(mediawiki, forum, rig):
    from bot.lock import ProcessLock

    held = ProcessLock.acquire(rig.state_path())
    try:
        done = rig.run_process(forum, "--once", "--live")
        started = time.monotonic()
        waited = rig.run_process(forum, "--once", "--live", "--wait-for-lock", "2")
    finally:
        held.release()
    assert done.code == 2 and f"another live bot process (pid {os.getpid()})" in done.stderr
    assert waited.code == 2 and time.monotonic() - started >= 2
    assert rig.run_process(forum, "--once", "--live").code == 0  # free again


def test_secrets_in_error_bodies_and_urls_never_reach_the_log_or_the_state(mediawiki, forum, rig, llm_server):
    rig.run(forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    echo = llm_server(lambda body: ErrorReply(401, f"Incorrect API key provided: {SECRET_KEY}"))
    base = echo.base_url.replace("http://", "http://operator:url-password-123@")
    done = rig.run_process(forum, "--once", "--live", llm=Endpoint(base))
    assert done.code == 0
    output = done.stdout + done.stderr
    assert "Incorrect API key provided" in output  # the error is reported ...
    assert SECRET_KEY not in output and "url-password-123" not in output  # ... without the secrets
    assert "HTTP Request:" not in output  # the HTTP client's request log stays off at INFO
    errors = " ".join(record.last_error or "" for record in rig.records().values())
    assert "Incorrect API key provided" in errors and SECRET_KEY not in errors
    traces = " ".join(record.trace or "" for record in rig.records().values())  # the stop message, stored
    assert "Incorrect API key provided" in traces and SECRET_KEY not in traces


def test_messages_send_the_operator_the_right_way(mediawiki, forum, rig, llm_server):
    env = {name: value for name, value in os.environ.items() if not name.startswith("OPENAI_")}
    no_key = subprocess.run([sys.executable, "-m", "bot.run", "--once"], env=env, capture_output=True, text=True,
                            timeout=120, cwd=rig.directory)
    assert no_key.returncode == 2
    assert "OPENAI_API_KEY" in no_key.stderr and "api_key_file" in no_key.stderr and "base_url" in no_key.stderr
    assert "--api-key-file" not in no_key.stderr and "--base-url" not in no_key.stderr
    help_text = subprocess.run([sys.executable, "-m", "bot.run", "--help"], capture_output=True, text=True,
                               timeout=120).stdout
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SPINACH_MODEL", "WIKIDATA_API_URL", "WIKIDATA_SPARQL_URL",
                     "SPINACH_CONTACT", "SPINACH_BOT_USER", "SPINACH_BOT_PASSWORD_FILE", "SPINACH_BOT_API_URL",
                     "SPINACH_BOT_FAMILY", "SPINACH_BOT_LANG", "PYWIKIBOT_DIR"):
        assert variable in help_text
    # The repository's own user-config.py, pointed at this wiki by the documented variables, with a bot that
    # does not exist: the message names the account, not the network.
    pywikibot_dir = rig.directory / "operator"
    pywikibot_dir.mkdir()
    shutil.copy(ROOT / "user-config.py", pywikibot_dir / "user-config.py")
    (pywikibot_dir / "password.py").write_text("('NoSuchBot', BotPassword('x', 'abcdefghijklmnopqrstuvwxyz012345'))\n")
    operator = {**os.environ, "PYWIKIBOT_DIR": str(pywikibot_dir), "SPINACH_BOT_API_URL": mediawiki.api_url,
                "SPINACH_BOT_USER": "NoSuchBot", "SPINACH_BOT_PASSWORD_FILE": str(pywikibot_dir / "password.py"),
                "OPENAI_BASE_URL": rig.llm.base_url}
    missing = subprocess.run([sys.executable, "-m", "bot.run", "--page", forum, "--once", "--live"], env=operator,
                             capture_output=True, text=True, timeout=120, cwd=rig.directory)
    assert missing.returncode == 2 and "cannot reach the wiki" not in missing.stderr
    assert "SPINACH_BOT_USER" in missing.stderr or "BotPassword" in missing.stderr, missing.stderr[-2000:]
    # model and base_url in bot.ini; the documented variables reach this wiki; no family file is written.
    model = llm_server(policy())
    (rig.directory / "bot.ini").write_text(f"[bot]\nbase_url = {model.base_url}\nmodel = a-model-from-bot-ini\n")
    operator.update(SPINACH_BOT_USER=BOT_USER, SPINACH_BOT_PASSWORD_FILE=str(PYWIKIBOT_DIR / "user-password.py"))
    del operator["OPENAI_BASE_URL"]
    operator.update(WIKIDATA_API_URL=rig.wikidata.api_url, WIKIDATA_SPARQL_URL=rig.wikidata.sparql_url)
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    dry = subprocess.run([sys.executable, "-m", "bot.run", "--page", forum, "--once", "--backlog", "--config",
                          str(rig.directory / "bot.ini")], env=operator, capture_output=True, text=True, timeout=300,
                         cwd=rig.directory)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert f"as {BOT_USER}" in dry.stderr and "dry run: nothing was saved" in dry.stdout
    assert {request["model"] for request in model.requests} == {"a-model-from-bot-ini"}
    assert not (pywikibot_dir / "families").exists() and not (rig.directory / "families").exists()


def set_template_q(mediawiki, forum: str, text: str, summary: str) -> None:
    """Save *text* as Template:Q and purge *forum*, as the wiki's job queue does after a template changes: its
    stored rendering (what the edit check compares against) then shows the template as it now is."""
    mediawiki.edit_as_human("Template:Q", text, summary)
    mediawiki.human().call(post=True, action="purge", titles=forum)


def lines_naming(log: str, words: str) -> int:
    """How many lines of *log* name *words*."""
    return sum(words in line for line in log.splitlines())


def reply_in(text: str, question: str) -> str:
    """The bot's reply below *question* on the page whose text is *text*: the lines up to its signature."""
    after = text.split(question, 1)[1]
    return after[:after.index("[[User:SpinachBot")]


def test_a_q_template_that_links_out_is_named_and_the_reply_goes_in_its_plain_form(mediawiki, forum, rig):
    rig.run(forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    # A wiki whose {{Q}} links out: every reply with {{Q}} in its preview would add an external link; the plain
    # form writes the items as wiki links, which add none, and is posted.
    set_template_q(mediawiki, forum, "[https://example.org/{{{1}}} {{{1}}}]", "a {{Q}} that links out")
    try:
        dry = rig.run(forum, "--once", "--dry-run")
        assert dry.code == 0 and "refused by the edit check" not in dry.stdout, dry.stdout[-2000:]
        assert "in its plain form" in dry.stdout and "external links would appear" in dry.stdout
        assert "Template:Q brings in https://example.org/Q124500, which the reply's own markup" in dry.stderr
        live = rig.run(forum, "--once", "--live")
        assert live.code == 0 and len(rig.bot_edits(forum)) == 1, live.stderr[-3000:]
        reply = reply_in(mediawiki.page_text(forum), "Who advised Euler?")
        assert "{{" not in reply and "[[Q124500|Johann Bernoulli]]" in reply
        assert "https://example.org/Q124500" not in mediawiki.rendered_html(forum)
        assert lines_naming(live.stderr, "Template:Q") == 1 and "Traceback" not in live.stderr
        [record] = [record for record in rig.records().values() if record.heading == "Euler"]
        assert record.status == "answered"
    finally:
        set_template_q(mediawiki, forum, "{{{1}}}", "entity template")


def test_a_q_template_that_transcludes_a_page_per_item_is_named_once_and_the_plain_reply_posted(mediawiki, forum,
                                                                                                 rig):
    rig.run(forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?")
                            + new_section("Bernoulli", "Who advised Euler, again?", "Bob", 5))
    mediawiki.edit_as_human("Q124500", "Johann Bernoulli, a Swiss mathematician.", "an item's page")
    set_template_q(mediawiki, forum, "{{:{{{1}}}}}", "a {{Q}} that shows the item's page")
    try:
        dry = rig.run(forum, "--once", "--dry-run")
        assert dry.code == 0 and "refused by the edit check" not in dry.stdout, dry.stdout[-2000:]
        said = ("Template:Q brings in Q124500 (a page per item), which the reply's own markup does not add on the "
                "sample: replies write items as links instead; to have {{Q}} again, make Template:Q show its item "
                "without transcluding a page")
        assert said in dry.stderr and lines_naming(dry.stderr, "Template:Q") == 1, dry.stderr[-3000:]
        assert dry.stdout.count("--- reply to 'Euler' in its plain form") == 1
        live = rig.run(forum, "--once", "--live")
        assert live.code == 0 and len(rig.bot_edits(forum)) == 2, live.stderr[-3000:]
        assert lines_naming(live.stderr, "Template:Q") == 1 and "for the reason logged before" in live.stderr
        text = mediawiki.page_text(forum)
        for question in ("Who advised Euler?", "Who advised Euler, again?"):
            reply = reply_in(text, question)
            assert "{{" not in reply and "[[Q124500|Johann Bernoulli]]" in reply
            assert final_query_wikitext(EULER_ADVISORS_QUERY, markup=Markup.LINKS) in reply
        parsed = mediawiki.api(action="parse", page=forum, prop="links|templates|externallinks", formatversion="2")
        assert "Q124500" in {link["title"] for link in parsed["parse"]["links"]}
        assert "Q124500" not in {template["title"] for template in parsed["parse"]["templates"]}
        assert any(url.startswith("https://query.wikidata.org/") for url in parsed["parse"]["externallinks"])
        assert all(record.status == "answered" for record in rig.records().values()
                   if record.heading in ("Euler", "Bernoulli"))
    finally:
        set_template_q(mediawiki, forum, "{{{1}}}", "entity template")
        mediawiki.edit_as_human("Q124500", "", "blanked")


def test_a_reply_refused_in_its_plain_form_too_is_refused_with_both_reasons_and_not_retried(mediawiki, forum, rig):
    rig.run(forum, "--once", "--live")
    hidden = ('\n<div style="display:none">' + new_section("Euler", "Who advised Euler?") + "</div>\n")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + hidden)
    mediawiki.edit_as_human("Q124500", "Johann Bernoulli, a Swiss mathematician.", "an item's page")
    set_template_q(mediawiki, forum, "{{:{{{1}}}}}", "a {{Q}} that shows the item's page")
    try:
        dry = rig.run(forum, "--once", "--dry-run")
        assert dry.code == 0 and "refused by the edit check" in dry.stdout, dry.stdout[-2000:]
        live = rig.run(forum, "--once", "--live")
        assert live.code == 0 and rig.bot_edits(forum) == []
        assert "Traceback" not in live.stderr and "unexpected error" not in live.stderr
        [record] = [record for record in rig.records().values() if record.heading == "Euler"]
        assert record.status == "refused"
        normal, plain = record.last_error.split("; and in its plain form (items as links, the query as a text "
                                                "block and a link): ")
        assert "templates would appear: ['Q124500']" in normal and "Template:Q brings in Q124500" in normal
        assert "hidden from readers" in normal and "hidden from readers" in plain and "Q124500" not in plain
        asked = len(rig.llm.requests)
        again = rig.run(forum, "--once", "--live")
        assert again.code == 0 and len(rig.llm.requests) == asked and rig.bot_edits(forum) == []
    finally:
        set_template_q(mediawiki, forum, "{{{1}}}", "entity template")
        mediawiki.edit_as_human("Q124500", "", "blanked")


def test_with_a_store_a_second_live_process_is_told_of_the_first_and_can_wait_for_it(mediawiki, forum, rig):
    from agent.kb.local import LocalKB
    from bot.lock import ProcessLock

    store = rig.directory / "store"
    rig.run(forum, "--once", "--live", "--kb", str(store))  # the first look; creates the store
    held, kb = ProcessLock.acquire(rig.state_path()), LocalKB(store)  # as a live bot holds both
    try:
        refused = rig.run_process(forum, "--once", "--live", "--kb", str(store))
        assert refused.code == 2 and f"another live bot process (pid {os.getpid()})" in refused.stderr
        assert "open in another process" not in refused.stderr
        waiting = rig.start(forum, "--once", "--live", "--kb", str(store), "--wait-for-lock", "120")
        log = LogReader(waiting)
        wait_for(lambda: log.count("waiting up to 120 s"), PATIENCE, "the second process to wait", log.death)
    finally:
        kb.close()
        held.release()
    waiting.wait(timeout=120)
    stderr = log.close()
    assert waiting.returncode == 0, stderr[-3000:]
    assert "pass over" in stderr


class Shortener(BaseHTTPRequestHandler):
    """w.wiki as it answers: a redirect to the long URL, or 404 for a code it does not know."""

    targets = {"/AbC1": "https://query.wikidata.org/#" + urllib.parse.quote(EULER_ADVISORS_QUERY, safe=""),
               "/Xyz9": "https://www.wikidata.org/wiki/Q42"}

    def do_GET(self):  # noqa: N802 (http.server's name)
        target = self.targets.get(self.path)
        self.send_response(301 if target else 404)
        if target:
            self.send_header("Location", target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_short_link_in_a_request_reaches_the_model_as_the_askers_query(mediawiki, forum, rig):
    shortener = LoopbackServer(Shortener)
    try:
        (rig.directory / "bot.ini").write_text(f"[bot]\nshort_links = {shortener.base}\n")
        rig.run(forum, "--once", "--live", "--config", str(rig.directory / "bot.ini"))
        mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section(
            "Euler", "Why does https://w.wiki/AbC1 not list them all? See also https://w.wiki/Xyz9 and "
                     "https://w.wiki/Nope"))
        done = rig.run(forum, "--once", "--live", "--config", str(rig.directory / "bot.ini"))
    finally:
        shortener.close()
    assert done.code == 0 and len(rig.bot_edits(forum)) == 1, done.stderr[-3000:]
    asked = "\n".join(str(message.get("content")) for message in rig.llm.requests[0]["messages"])
    assert "The person asking gave this query:" in asked and EULER_ADVISORS_QUERY in asked
    assert "Your explanation opens your reply" in asked
    assert "does not redirect (HTTP 404)" in done.stderr and "points to www.wikidata.org" in done.stderr


# --- whom a reply addresses -------------------------------------------------------------------------------------

def signed(user: str, minute: int) -> str:
    return f"[[User:{user}|{user}]] ([[User talk:{user}|talk]]) 12:{minute:02d}, 20 November 2026 (UTC)"


def user_pages_linked(mediawiki, title: str, wikitext: str) -> set[str]:
    """The user pages MediaWiki's parser links in *wikitext* (on page *title*): those a mention notifies."""
    parsed = mediawiki.api(action="parse", title=title, text=wikitext, contentmodel="wikitext", prop="links")
    return {link["title"] for link in parsed["parse"]["links"] if link["ns"] == 2}


def reply_lead(page: str, heading: str, after: str) -> str:
    """The first line of the bot's reply in section *heading*, below the comment that ends with *after*."""
    from tests.support.forum_text import section_text

    return section_text(page, heading).split(after, 1)[1].strip("\n").split("\n", 1)[0]


def test_a_ping_in_an_old_question_addresses_the_asker_and_the_one_who_pinged(mediawiki, forum, rig):
    bob = mediawiki.editor("Bob")
    mediawiki.edit_as_human(forum, "Ask here." + new_section("Old question", "Who advised Euler?"), "a question")
    run = rig.run(forum, "--once", "--live")  # the first look: the question is backlog, never answered
    assert run.code == 0 and rig.bot_edits(forum) == []
    bob.edit(forum, mediawiki.page_text(forum) + "\n:{{ping|SpinachBot}} could you help here? " + signed("Bob", 5)
             + "\n", "a ping")
    done = rig.run(forum, "--once", "--live")
    assert done.code == 0, done.stderr[-3000:]
    [edit] = rig.bot_edits(forum)
    lead = reply_lead(mediawiki.page_text(forum), "Old question", "could you help here? " + signed("Bob", 5))
    assert lead.startswith("::{{re|1=Alice|2=Bob}} "), lead  # the asker first, then who asked the bot
    assert user_pages_linked(mediawiki, forum, lead) == {"User:Alice", "User:Bob"}  # both are notified
    assert "answering 'Old question' (ping)" in done.stderr and "(follow-up)" not in done.stderr
    assert edit["comment"].startswith("/* Old question */ answer to a ping: a SPARQL query"), edit["comment"]


def test_a_third_partys_follow_up_addresses_the_asker_and_its_author(mediawiki, forum, rig):
    bob = mediawiki.editor("Bob")
    mediawiki.edit_as_human(forum, "Ask here.", "the forum")
    assert rig.run(forum, "--once", "--live").code == 0
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"), "ask")
    assert rig.run(forum, "--once", "--live").code == 0 and len(rig.bot_edits(forum)) == 1
    bob.edit(forum, mediawiki.page_text(forum) + "\n::{{ping|SpinachBot}} and who advised them? " + signed("Bob", 30)
             + "\n", "a follow-up")
    done = rig.run(forum, "--once", "--live")
    assert done.code == 0, done.stderr[-3000:]
    latest = rig.bot_edits(forum)[0]
    assert len(rig.bot_edits(forum)) == 2 and "follow-up" in latest["comment"], latest["comment"]
    lead = reply_lead(mediawiki.page_text(forum), "Euler", "and who advised them? " + signed("Bob", 30))
    assert lead.startswith(":::{{re|1=Alice|2=Bob}} "), lead
    assert user_pages_linked(mediawiki, forum, lead) == {"User:Alice", "User:Bob"}
    assert "answering 'Euler' (follow-up)" in done.stderr


def test_a_question_its_asker_settled_before_the_bot_came_is_skipped_with_the_reason(mediawiki, forum, rig):
    mediawiki.edit_as_human(forum, "Ask here.", "the forum")
    assert rig.run(forum, "--once", "--live").code == 0
    page = "Ask here." + new_section("Euler", "Who advised Euler?") + new_section("Students", "Who did Euler teach?")
    mediawiki.edit_as_human(forum, page, "two questions")
    page = page.replace("Who advised Euler? " + signed("Alice", 0), "Who advised Euler? " + signed("Alice", 0)
                        + "\n:Solved, thanks. " + signed("Alice", 10))
    page += ":And their students' students? " + signed("Alice", 11) + "\n"
    mediawiki.edit_as_human(forum, page, "one settled, one asked further")
    done = rig.run(forum, "--once", "--live")
    assert done.code == 0, done.stderr[-3000:]
    [edit] = rig.bot_edits(forum)
    assert edit["comment"].startswith("/* Students */")
    assert "skipping 'Euler': the asker said the question is settled (\"solved\")" in done.stderr
    assert rig.records()[next(key for key in rig.records() if key.startswith("Euler @"))].status == "skipped"
