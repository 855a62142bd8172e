"""The bot against a real MediaWiki, run as an operator runs it: ``python -m bot.run``.

The language model and Wikidata are stand-ins on 127.0.0.1 (see tests/support); the wiki, pywikibot,
the signature expansion and the HTML are real.
"""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest

from bot.render import final_query_wikitext
from tests.support.euler import EULER_ADVISORS_QUERY, euler_entities
from tests.support.llm_server import ErrorReply, ToolCallReply
from tests.support.mediawiki import BOT_USER, PYWIKIBOT_DIR
from tests.support.wikidata_server import select

pytestmark = pytest.mark.mediawiki
HOSTILE = "}} {{ [[Category:Spam]] ~~~~ <script>alert(1)</script> __NOTOC__ </div> <nowiki> == Heading =="


def new_section(heading: str, question: str, user: str = "Alice", minute: int = 0) -> str:
    return (f"\n\n== {heading} ==\n{question} [[User:{user}|{user}]] ([[User talk:{user}|talk]]) "
            f"12:{minute:02d}, 20 November 2026 (UTC)\n")


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


@pytest.fixture
def forum(mediawiki, request):
    return mediawiki.fresh_forum(request.node.name)


def run_bot(tmp_path: Path, services, page: str, *options: str, llm=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYWIKIBOT_DIR": str(PYWIKIBOT_DIR), "OPENAI_API_KEY": "sk-test-secret-value",
           "OPENAI_BASE_URL": (llm or services["llm"]).base_url,
           "WIKIDATA_API_URL": services["wikidata"].api_url, "WIKIDATA_SPARQL_URL": services["wikidata"].sparql_url}
    done = subprocess.run([sys.executable, "-m", "bot.run", "--page", page, "--state", str(tmp_path / "state.sqlite"),
                           *options], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "sk-test-secret-value" not in done.stdout + done.stderr
    return done


def final_sparql(tmp_path: Path, heading: str) -> str:
    """The final query of the agent's run for *heading*, as the bot stored it."""
    with sqlite3.connect(tmp_path / "state.sqlite") as connection:
        traces = [json.loads(trace) for trace, in connection.execute(
            "SELECT trace FROM sections WHERE heading = ? AND trace IS NOT NULL", (heading,))]
    assert traces, f"no stored run for {heading!r}"
    return traces[-1]["final_sparql"]


def bot_edits(mediawiki, title: str) -> list[dict]:
    return [revision for revision in mediawiki.revisions(title) if revision["user"] == BOT_USER]


def test_only_new_sections_get_one_signed_reply_each(mediawiki, forum, services, tmp_path):
    first = run_bot(tmp_path, services, forum, "--once", "--live")
    assert first.returncode == 0, first.stderr
    assert bot_edits(mediawiki, forum) == []  # the backlog is left alone
    page = mediawiki.page_text(forum)
    page += new_section("Doctoral advisors of Euler", "Who were the doctoral advisors of Leonhard Euler?")
    page += new_section("Please leave me alone", "{{nobots}} A question for humans only.", minute=5)
    mediawiki.edit_as_human(forum, page, "two new questions")

    second = run_bot(tmp_path, services, forum, "--once", "--live")
    assert second.returncode == 0, second.stderr
    edits = bot_edits(mediawiki, forum)
    assert len(edits) == 1, second.stderr
    assert edits[0]["comment"].startswith("/* Doctoral advisors of Euler */")
    assert not edits[0]["minor"]
    changes = mediawiki.api(action="query", list="recentchanges", rcprop="flags|title", rcuser=BOT_USER,
                            rclimit="50")["query"]["recentchanges"]
    assert [change["bot"] for change in changes if change["title"] == forum.replace("_", " ")] == [True]
    text = mediawiki.page_text(forum)
    euler = text.split("== Doctoral advisors of Euler ==")[1].split("== Please leave me alone ==")[0]
    final = final_sparql(tmp_path, "Doctoral advisors of Euler")
    assert "wdt:P184" in final and final_query_wikitext(final) in euler
    assert re.search(r"\[\[User:SpinachBot\|SpinachBot\]\] \(\[\[User talk:SpinachBot\|talk\]\]\) "
                     r"\d\d:\d\d, \d+ \w+ \d{4} \(UTC\)", euler)
    assert "~~~~" not in text
    assert text.split("== Please leave me alone ==")[1].count("SpinachBot") == 0
    html = mediawiki.rendered_html(forum)
    links = re.findall(r'href="https://query\.wikidata\.org/#([^"]+)"', html)
    assert urllib.parse.unquote(links[-1].replace("&amp;", "&")) == final
    assert "mw-collapsible mw-collapsed" in html

    third = run_bot(tmp_path, services, forum, "--once", "--live")
    assert third.returncode == 0 and len(bot_edits(mediawiki, forum)) == 1


def test_dry_run_prints_the_reply_and_diff_and_edits_nothing(mediawiki, forum, services, tmp_path):
    run_bot(tmp_path, services, forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    done = run_bot(tmp_path, services, forum, "--once", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "dry run: nothing was saved" in done.stdout and re.search(r"^\+.*~~~~", done.stdout, re.M)
    assert bot_edits(mediawiki, forum) == []
    section = run_bot(tmp_path, services, forum, "--section", "Euler")  # --section alone is a dry run too
    assert "dry run: nothing was saved" in section.stdout and bot_edits(mediawiki, forum) == []


def test_section_that_does_not_exist_names_close_matches(mediawiki, forum, services, tmp_path):
    done = run_bot(tmp_path, services, forum, "--section", "Query timed out")
    assert done.returncode == 2
    assert "no section titled 'Query timed out'" in done.stderr and "Query times out" in done.stderr


def test_the_stop_page_blocks_every_edit(mediawiki, forum, services, tmp_path):
    run_bot(tmp_path, services, forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "stop: the bot posted nonsense", "stop the bot")
    done = run_bot(tmp_path, services, forum, "--once", "--live")
    assert done.returncode == 0 and "emergency stop" in done.stderr
    assert f"User:{BOT_USER}/Stop is not empty" in done.stderr and "{username}" not in done.stderr
    assert bot_edits(mediawiki, forum) == []


def test_a_lost_state_write_after_the_save_causes_no_second_reply(mediawiki, forum, services, tmp_path):
    run_bot(tmp_path, services, forum, "--once", "--live")
    shutil.copy(tmp_path / "state.sqlite", tmp_path / "before.sqlite")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    assert run_bot(tmp_path, services, forum, "--once", "--live").returncode == 0
    assert len(bot_edits(mediawiki, forum)) == 1
    # As if the process died after saving and before recording it: the state knows nothing of the answer.
    shutil.copy(tmp_path / "before.sqlite", tmp_path / "state.sqlite")
    assert run_bot(tmp_path, services, forum, "--once", "--live").returncode == 0
    assert len(bot_edits(mediawiki, forum)) == 1


def test_a_human_edit_while_the_agent_works_loses_nothing(mediawiki, forum, services, tmp_path, llm_server):
    run_bot(tmp_path, services, forum, "--once", "--live")
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

    done = run_bot(tmp_path, services, forum, "--once", "--live", llm=llm_server(edit_then_answer))
    assert done.returncode == 0, done.stderr
    text = mediawiki.page_text(forum)
    assert "New text by a human." in text and ":A human reply in the same section." in text
    assert len(bot_edits(mediawiki, forum)) == 1
    euler = text.split("== Euler ==")[1]
    assert euler.index("A human reply") < euler.index("{{SPARQL|query=")


def test_a_failing_model_is_recorded_and_the_pass_goes_on(mediawiki, forum, services, tmp_path, llm_server):
    run_bot(tmp_path, services, forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    broken = llm_server(lambda body: ErrorReply(400, "the model is not available"))
    done = run_bot(tmp_path, services, forum, "--once", "--live", llm=broken)
    assert done.returncode == 0, done.stderr
    assert "llm_error" in done.stderr and bot_edits(mediawiki, forum) == []


def test_hostile_text_stays_inert_on_the_real_wiki(mediawiki, forum, services, tmp_path, llm_server):
    run_bot(tmp_path, services, forum, "--once", "--live")
    # The asker quotes the hostile text inertly (raw, it would break the asker's own part of the page);
    # the agent still reads it as the question, and the model and the data echo it raw.
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section(
        "Hostile", "<nowiki>" + HOSTILE.replace("<nowiki>", "") + "</nowiki>"))
    query = 'SELECT ?x WHERE { ?x rdfs:label "' + HOSTILE + '"@en . } # ~~~~ [[Category:Spam]]'
    hostile_model = llm_server(policy(thought=HOSTILE, query=query))
    hostile_data = dict(services)
    hostile_data["wikidata"].sparql = lambda q: select(["x", "xLabel"], [
        {"x": "Q42", "xLabel": {"type": "literal", "value": HOSTILE, "xml:lang": "en"}}])

    def categories():
        return mediawiki.api(action="parse", page=forum, prop="categories")["parse"]["categories"]

    before_categories = categories()  # the asker's own text is live wikitext; the bot's must add nothing
    before_headings = mediawiki.rendered_html(forum).count("<h2")
    done = run_bot(tmp_path, hostile_data, forum, "--once", "--live", llm=hostile_model)
    assert done.returncode == 0, done.stderr
    text = mediawiki.page_text(forum)
    reply = text.split("== Hostile ==")[1]
    assert reply.count("[[User:SpinachBot|SpinachBot]]") == 1
    assert "[[User:Alice" not in reply.split("\n", 2)[-1]  # no other signature was expanded
    html = mediawiki.rendered_html(forum)
    assert "<script>alert" not in html
    assert categories() == before_categories
    assert html.count("<h2") == before_headings
    links = re.findall(r'href="https://query\.wikidata\.org/#([^"]+)"', html)
    final = final_sparql(tmp_path, "Hostile")
    assert "Category:Spam" in final
    assert urllib.parse.unquote(links[-1].replace("&amp;", "&")) == final  # "Try it!" runs the final query


def test_the_watcher_answers_on_schedule_and_stops_cleanly_on_sigterm(mediawiki, forum, services, tmp_path):
    import signal
    import time

    run_bot(tmp_path, services, forum, "--once", "--live")  # the first look: backlog
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    (tmp_path / "bot.ini").write_text("[bot]\ninterval_minutes = 0.02\nmax_sections_per_pass = 1\n")
    env = {**os.environ, "PYWIKIBOT_DIR": str(PYWIKIBOT_DIR), "OPENAI_API_KEY": "sk-test",
           "OPENAI_BASE_URL": services["llm"].base_url, "WIKIDATA_API_URL": services["wikidata"].api_url,
           "WIKIDATA_SPARQL_URL": services["wikidata"].sparql_url}
    watcher = subprocess.Popen([sys.executable, "-m", "bot.run", "--live", "--page", forum, "--state",
                                str(tmp_path / "state.sqlite"), "--config", str(tmp_path / "bot.ini")],
                               env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not bot_edits(mediawiki, forum) and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(3)  # a few more passes: none of them may post again
    watcher.send_signal(signal.SIGTERM)
    _, stderr = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, stderr
    assert "finishing the current section, then stopping" in stderr
    assert len(bot_edits(mediawiki, forum)) == 1, stderr[-3000:]
    assert "'written': 1" in stderr


def test_simulate_with_live_is_a_dry_run_and_loses_no_question(mediawiki, forum, services, tmp_path):
    run_bot(tmp_path, services, forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    simulated = run_bot(tmp_path, services, forum, "-simulate", "--once", "--live")
    assert simulated.returncode == 0, simulated.stderr
    assert "-simulate: this is a dry run" in simulated.stderr and "'written'" not in simulated.stderr
    assert bot_edits(mediawiki, forum) == []
    live = run_bot(tmp_path, services, forum, "--once", "--live")
    assert live.returncode == 0 and len(bot_edits(mediawiki, forum)) == 1, live.stderr


def test_a_second_live_process_on_the_same_state_is_refused_clearly(mediawiki, forum, services, tmp_path):
    from bot.lock import ProcessLock

    held = ProcessLock.acquire(tmp_path / "state.sqlite")
    try:
        done = run_bot(tmp_path, services, forum, "--once", "--live")
        started = time.monotonic()
        waited = run_bot(tmp_path, services, forum, "--once", "--live", "--wait-for-lock", "2")
    finally:
        held.release()
    assert done.returncode == 2 and f"another live bot process (pid {os.getpid()})" in done.stderr
    assert waited.returncode == 2 and time.monotonic() - started >= 2
    assert run_bot(tmp_path, services, forum, "--once", "--live").returncode == 0  # free again


def test_secrets_in_error_bodies_and_urls_never_reach_the_log_or_the_state(mediawiki, forum, services, tmp_path,
                                                                          llm_server):
    run_bot(tmp_path, services, forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    echo = llm_server(lambda body: ErrorReply(401, "Incorrect API key provided: sk-test-secret-value"))
    base = echo.base_url.replace("http://", "http://operator:url-password-123@")
    done = run_bot(tmp_path, services, forum, "--once", "--live", llm=type("Endpoint", (), {"base_url": base}))
    assert done.returncode == 0
    output = done.stdout + done.stderr
    assert "Incorrect API key provided" in output  # the error is reported ...
    assert "sk-test-secret-value" not in output and "url-password-123" not in output  # ... without the secrets
    assert "HTTP Request:" not in output  # the HTTP client's request log stays off at INFO
    with sqlite3.connect(tmp_path / "state.sqlite") as connection:
        errors = " ".join(error or "" for error, in connection.execute("SELECT last_error FROM sections"))
    assert "Incorrect API key provided" in errors and "sk-test-secret-value" not in errors


def test_messages_send_the_operator_the_right_way(mediawiki, forum, services, tmp_path, llm_server):
    env = {name: value for name, value in os.environ.items() if not name.startswith("OPENAI_")}
    no_key = subprocess.run([sys.executable, "-m", "bot.run", "--once"], env=env, capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
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
    pywikibot_dir = tmp_path / "operator"
    pywikibot_dir.mkdir()
    shutil.copy(Path(__file__).parent.parent / "user-config.py", pywikibot_dir / "user-config.py")
    (pywikibot_dir / "password.py").write_text("('NoSuchBot', BotPassword('x', 'abcdefghijklmnopqrstuvwxyz012345'))\n")
    operator = {**os.environ, "PYWIKIBOT_DIR": str(pywikibot_dir), "SPINACH_BOT_API_URL": mediawiki.api_url,
                "SPINACH_BOT_USER": "NoSuchBot", "SPINACH_BOT_PASSWORD_FILE": str(pywikibot_dir / "password.py"),
                "OPENAI_BASE_URL": services["llm"].base_url}
    missing = subprocess.run([sys.executable, "-m", "bot.run", "--page", forum, "--once", "--live"], env=operator,
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert missing.returncode == 2 and "cannot reach the wiki" not in missing.stderr
    assert "SPINACH_BOT_USER" in missing.stderr or "BotPassword" in missing.stderr, missing.stderr[-2000:]
    # model and base_url in bot.ini; the documented variables reach this wiki; no family file is written.
    model = llm_server(policy())
    (tmp_path / "bot.ini").write_text(f"[bot]\nbase_url = {model.base_url}\nmodel = a-model-from-bot-ini\n")
    operator.update(SPINACH_BOT_USER=BOT_USER, SPINACH_BOT_PASSWORD_FILE=str(PYWIKIBOT_DIR / "user-password.py"))
    del operator["OPENAI_BASE_URL"]
    operator.update(WIKIDATA_API_URL=services["wikidata"].api_url, WIKIDATA_SPARQL_URL=services["wikidata"].sparql_url)
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    dry = subprocess.run([sys.executable, "-m", "bot.run", "--page", forum, "--once", "--backlog", "--config",
                          str(tmp_path / "bot.ini")], env=operator, capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert f"as {BOT_USER}" in dry.stderr and "dry run: nothing was saved" in dry.stdout
    assert {request["model"] for request in model.requests} == {"a-model-from-bot-ini"}
    assert not (pywikibot_dir / "families").exists() and not (tmp_path / "families").exists()
