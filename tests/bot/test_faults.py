"""Faults survived and counted: the real bot, a real MediaWiki, fault proxies in front of the wiki, the model and
the query service.

The families, each run as an operator would meet it (``python -m bot.run``; a process of its own where it is
killed or runs as the watcher, in the test process otherwise):

* SIGKILL at every write point (during the agent run; after the wiki accepted the edit and before the state
  write; during the state write; during the page read), then a restart: one reply, answered, state intact;
* human edits racing the bot (while the agent works; held by the proxy between the bot's read and its save, in
  another section or the same one; in the same second as the revision the bot read): no human character lost,
  the reply once, in its section, above the lines saved in its thread after the bot read it; a follow-up saved
  so is answered at the next pass, below it (with the state lost, it is not: nothing twice);
* a question merged by an editor into an older thread as a subsection (while the agent answers it, renamed or
  not, or between two passes, into a thread the bot had answered or not): one reply, under the subsection, after
  the question, shown there; the question recorded answered, and a later pass changes nothing;
* faults injected while the watcher runs (model, query service, wiki): the watcher stays alive, every failure
  is recorded and retried, every question is answered once the fault has passed; the stop page halts edits
  within one pass and edits resume when it is emptied; a session the wiki forgot, and a login that then
  fails, heal by themselves;
* a page's history that blanks, reverts, undoes, moves, archives and restores sections (alone, and mixed with
  new questions): no section answered twice, no backlog answered;
* a reply the wiki refuses for a reason that does not pass by itself (the page's content model changed):
  recorded as refused, tried again once the page changes, never given up;
* the bot's own files: a state file that is not a database, a state file lost (questions asked meanwhile are
  answered), a throttle file full of killed processes;
* secrets: the model key, the query service's credentials (in its URL, so sent as Basic auth) and the bot
  password are looked for, plain and base64, in every state file, every line the bot wrote and every saved
  revision of the pages, after every test, and echoed back by the services in the secrets test.

The figures (trials, faults, double replies, backlog answered, lost characters, unanswered sections, secrets
found) are printed at the end.
"""

from __future__ import annotations

import base64
import re
import signal
import sqlite3
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.bot_rig import PATIENCE, SECRET_KEY, BotRig, BotRun, Endpoint, LogReader, wait_for
from tests.support.euler import EULER_ADVISORS_QUERY, euler_entities
from tests.support.fault_proxy import (
    EchoHeader, ExpireSession, Fault, FaultProxy, Reply, Rewrite, api_error, path_contains, wiki_action,
)
from tests.support.figures import REPORTS
from tests.support.llm_server import ErrorReply, ToolCallReply
from tests.support.mediawiki import BOT_PASSWORD, BOT_USER, PORT, HumanEditor
from tests.support.wikidata_server import select

pytestmark = pytest.mark.mediawiki
FIGURES = REPORTS["fault suite figures"]
#: Injected faults that fired, by kind.
KINDS = REPORTS["faults fired by kind"]
SIGNATURE = f"[[User:{BOT_USER}|"
LEAD = "Ask your SPARQL questions here.\n"
KILL_TRIALS = 5
RACE_TRIALS = 4
#: The query service's credentials, in the URL the bot is given: requests sends them as Basic auth.
SPARQL_USER, SPARQL_PASSWORD = "spinach-reader", "query-service-password-0417"


def secrets() -> dict[str, str]:
    """Every secret the bot holds, by name, in the forms it travels in."""
    basic = f"{SPARQL_USER}:{SPARQL_PASSWORD}"
    found = {"model key": SECRET_KEY, "query service password": SPARQL_PASSWORD, "query service credentials": basic,
             "bot password": BOT_PASSWORD}
    for name, value in list(found.items()):
        found[f"{name} (base64)"] = base64.b64encode(value.encode()).decode().rstrip("=")
    return found


def question(heading: str, text: str, minute: int) -> str:
    return (f"\n== {heading} ==\n{text} [[User:Alice|Alice]] ([[User talk:Alice|talk]]) "
            f"12:{minute % 60:02d}, 20 November 2026 (UTC)\n")


def policy(on_call=None):
    """A model that runs one query, then stops; *on_call* runs at the first policy call of each question."""

    def reply(body):
        if "tools" not in body:
            return ErrorReply(400, "no pruning expected")
        steps = sum(message["role"] == "tool" for message in body["messages"])
        if steps == 0:
            if on_call is not None:
                on_call(body)
            return ToolCallReply("execute_sparql", {"thought": "Ask the query service.",
                                                    "sparql": EULER_ADVISORS_QUERY})
        return ToolCallReply("stop", {"thought": "That answers it.", "explanation": "It lists the advisors.",
                                      "language": "en"})

    return reply


def section_text(text: str, heading: str) -> str:
    after = text.split(f"== {heading} ==", 1)[1]
    return after.split("\n== ", 1)[0]


@dataclass
class Rig:
    """The bot (:class:`BotRig`) with the wiki, the model and the query service each behind a fault proxy."""

    bot: BotRig
    wiki: FaultProxy
    model: FaultProxy
    query: FaultProxy
    #: Callbacks the stand-in model runs at the first policy call of a question ("model").
    hooks: dict = field(default_factory=dict)
    #: What the bot wrote (its log, what it printed) and the pages it worked on: searched for secrets at the end.
    logs: list[str] = field(default_factory=list)
    pages: set[str] = field(default_factory=set)

    @property
    def mediawiki(self):
        return self.bot.mediawiki

    def run(self, page: str, *options: str, **keywords) -> BotRun:
        """The bot, in this process, on *page*; what it wrote is kept."""
        self.pages.add(page)
        done = self.bot.run(page, *options, **keywords)
        self.logs.append(done.stdout + done.stderr)
        return done

    def start(self, page: str, *options: str, **keywords) -> subprocess.Popen:
        """The bot as a process of its own on *page* (its output is the caller's to keep, in ``logs``)."""
        self.pages.add(page)
        return self.bot.start(page, *options, **keywords)

    def leaks(self) -> list[str]:
        """Where a secret stands: in a state file, in what the bot wrote, in a saved revision of its pages."""
        places = {path.name: path.read_bytes().decode("utf-8", "replace")
                  for path in self.bot.directory.glob("*.sqlite*")}
        places["the bot's output"] = "\n".join(self.logs)
        for page in self.pages:
            places[f"the revisions of {page}"] = "\n".join(revision_texts(self.mediawiki, page))
        return [f"{name} in {where}" for where, text in places.items() for name, value in secrets().items()
                if value in text]

    def statuses(self, page: str, state: str = "state.sqlite") -> dict[str, tuple[str, int]]:
        return {key: (record.status, record.attempts) for key, record in self.bot.records(state, page).items()}


@pytest.fixture
def rig(mediawiki, llm_server, wikidata_server, tmp_path):
    wikidata = wikidata_server(sparql=lambda query: select(["advisor", "advisorLabel"], [
        {"advisor": "Q124500", "advisorLabel": {"type": "literal", "value": "Johann Bernoulli", "xml:lang": "en"}}]))
    wikidata.add(*euler_entities())
    hooks: dict = {}
    llm = llm_server(policy(lambda body: hooks.get("model", lambda: None)()))
    sparql = urllib.parse.urlsplit(wikidata.sparql_url)
    wiki = FaultProxy(f"http://127.0.0.1:{PORT}")
    model = FaultProxy(llm.base_url.rsplit("/v1", 1)[0])
    query = FaultProxy(f"http://{sparql.netloc}")
    sparql_path = sparql.path + (f"?{sparql.query}" if sparql.query else "")
    bot = BotRig(mediawiki, tmp_path, Endpoint(model.url("/v1")), wikidata, api_url=wiki.url("/api.php"),
                 sparql_url=query.url(sparql_path).replace("://", f"://{SPARQL_USER}:{SPARQL_PASSWORD}@"))
    mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "", "clear the stop page")
    made = Rig(bot, wiki, model, query, hooks)
    yield made
    for proxy in (wiki, model, query):
        proxy.close()
    assert not (tmp_path / "families").exists() and not (bot.pywikibot_dir() / "families").exists()
    leaks = made.leaks()
    FIGURES["secret occurrences"] += len(leaks)
    assert not leaks, f"secrets found: {leaks}"


def revision_texts(mediawiki, title: str) -> list[str]:
    """The text of every saved revision of *title*."""
    texts: list[str] = []
    extra: dict[str, str] = {}
    while True:
        answer = mediawiki.api(action="query", prop="revisions", titles=title, rvslots="main", rvprop="content",
                               rvlimit="50", **extra)
        texts += [revision["slots"]["main"].get("content", "")
                  for revision in answer["query"]["pages"][0].get("revisions", [])]
        if "continue" not in answer:
            return texts
        extra = {key: str(value) for key, value in answer["continue"].items()}


def count_replies(text: str, heading: str) -> int:
    return section_text(text, heading).count(SIGNATURE)


# --- SIGKILL at every write point ---------------------------------------------------------------------------

def _kill_in_the_next_state_write(process: subprocess.Popen, state: Path, hits: Counter) -> threading.Thread:
    """Kill *process* inside its next write to its SQLite state, whatever the machine's speed.

    A reader's lock on the state, taken now, lets the write begin (its rollback journal is written) and keeps it
    from committing (the commit waits for the lock); the process is killed once the journal exists, then the lock
    is let go.  The thread that does so is returned, to be joined.
    """
    journal = state.with_name(state.name + "-journal")
    reader = sqlite3.connect(state, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM sqlite_master").fetchone()  # a shared lock, held until the rollback

    def kill_in_the_write() -> None:
        try:
            wait_for(lambda: journal.exists() or process.poll() is not None, PATIENCE, "a state write")
            if process.poll() is None:
                process.kill()
                hits["killed during a state write"] += 1
        finally:
            reader.rollback()
            reader.close()

    thread = threading.Thread(target=kill_in_the_write, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("point", ["agent run", "after the save", "state write", "page read"])
def test_sigkill_at_every_write_point_loses_nothing_and_doubles_nothing(rig, point):
    human = rig.mediawiki.human()
    for trial in range(KILL_TRIALS):
        page = f"Wikidata:Faults/kill {point} {trial}"
        state = f"kill-{point.replace(' ', '-')}-{trial}.sqlite"
        human.edit(page, LEAD + question("Euler", "Who advised Euler?", trial))
        current: dict = {}

        def kill(params=None):
            current["process"].kill()

        rig.wiki.clear()
        rig.hooks.pop("model", None)
        if point == "agent run":
            rig.hooks["model"] = kill
        elif point == "after the save":
            rig.wiki.add(Fault("kill after save", wiki_action("edit", title=page), kill, when="after"))
        elif point == "state write":
            rig.wiki.add(Fault("kill in state write", wiki_action("edit", title=page), lambda params: current.update(
                killer=_kill_in_the_next_state_write(current["process"], rig.bot.state_path(state), FIGURES)),
                when="after"))
        else:
            reads = Counter()

            def page_read(path, params, page=page):
                if params.get("action") == "query" and "content" in params.get("rvprop", "") \
                        and params.get("titles") == page:
                    reads["n"] += 1
                    return reads["n"] == trial % 2 + 1  # the pass's read, or the re-read before saving
                return False

            rig.wiki.add(Fault("kill in page read", page_read, kill))
        current["process"] = rig.start(page, "--once", "--live", "--backlog", state=state)
        rig.logs.extend(current["process"].communicate(timeout=300))
        if "killer" in current:
            current["killer"].join(timeout=120)
        assert current["process"].returncode == -signal.SIGKILL, f"trial {trial}: the bot was not killed"
        rig.wiki.clear()
        rig.hooks.pop("model", None)
        done = rig.run(page, "--once", "--live", "--backlog", state=state)
        stderr = done.stderr
        assert done.code == 0, stderr[-3000:]
        text = rig.mediawiki.page_text(page)
        replies = count_replies(text, "Euler")
        FIGURES["kill trials"] += 1
        FIGURES["double replies"] += max(0, replies - 1)
        FIGURES["unanswered sections"] += replies == 0
        assert replies == 1, f"trial {trial}: {replies} replies\n{stderr[-3000:]}"
        assert rig.bot.integrity(state) == "ok"
        assert [status for status, _ in rig.statuses(page, state).values()] == ["answered"], stderr[-3000:]


# --- human edits racing the bot ------------------------------------------------------------------------------

@pytest.mark.parametrize("race", ["while the agent works", "before the save, another section",
                                  "before the save, same section", "same second as the revision read"])
def test_human_edits_racing_the_bot_are_never_lost(rig, race):
    human = rig.mediawiki.human()
    same_second = 0
    for trial in range(RACE_TRIALS):
        page = f"Wikidata:Faults/race {race} {trial}"
        other = question("Other", "{{nobots}} An older question, for humans.", 1)
        human.edit(page, LEAD + other + question("Euler", "Who advised Euler?", 2))
        added: list[str] = []
        ends: list[str] = []  # saved at the end of the thread after the bot read it: below the reply

        def human_edit(where: str, at: str | None = None) -> dict:
            text = rig.mediawiki.page_text(page)
            snippet = f"Human text {len(added)} of trial {trial}: <b>kept</b> & ~ [[User:Alice|Alice]]"
            added.append(snippet)
            if where == "other":
                text = text.replace("for humans.", "for humans.\n:" + snippet, 1)
            elif where == "above":
                text = text.replace("\n== Euler ==", f"\n== Inserted {trial} ==\n{snippet}\n\n== Euler ==", 1)
            else:
                text = text.rstrip("\n") + "\n::" + snippet + "\n"
                ends.append(snippet)
            return human.edit(page, text, "a human edit racing the bot", at=at)

        rig.wiki.clear()
        rig.hooks.pop("model", None)
        if race == "while the agent works":
            rig.hooks["model"] = lambda: (human_edit("above"), human_edit("end"))
        elif race == "before the save, another section":
            rig.wiki.add(Fault("human edit held before the save", wiki_action("edit", title=page),
                               lambda params: human_edit("other")))
        elif race == "before the save, same section":
            rig.wiki.add(Fault("human edit held before the save", wiki_action("edit", title=page),
                               lambda params: human_edit("end")))
        else:
            stamps: list[str] = []
            reads = Counter()

            def is_read(params, page=page) -> bool:
                return (params.get("action") == "query" and "content" in params.get("rvprop", "")
                        and params.get("titles") == page)

            def reread(path, params) -> bool:
                if is_read(params):
                    reads["n"] += 1
                    return reads["n"] == 2  # the re-read just before the save
                return False

            # Right before the bot's re-read a human saves revision R; the bot reads R; once the wiki has answered
            # that read, and before the bot's save, the human saves again, stamped by the wiki with R's second
            # (its clock set for that edit): the same second, however long the machine took in between.
            rig.wiki.add(Fault("human edit before the read", reread,
                               lambda params: stamps.append(human_edit("other")["newtimestamp"])))
            rig.wiki.add(Fault("human edit in the same second", lambda path, params: is_read(params)
                               and reads["n"] == 2,
                               lambda params: stamps.append(human_edit("end", at=stamps[0])["newtimestamp"]),
                               when="after"))
        done = rig.run(page, "--once", "--live", "--backlog", state=f"race-{trial}-{len(race)}.sqlite")
        stderr = done.stderr
        assert done.code == 0, stderr[-3000:]
        text = rig.mediawiki.page_text(page)
        FIGURES["human edits racing"] += len(added)
        lost = sum(len(snippet) for snippet in added if snippet not in text)
        FIGURES["lost human characters"] += lost
        replies = count_replies(text, "Euler")
        FIGURES["double replies"] += max(0, replies - 1)
        FIGURES["unanswered sections"] += replies == 0
        if race == "same second as the revision read":
            assert len(stamps) == 2 and stamps[0] == stamps[1], f"trial {trial}: human edits at {stamps}"
            same_second += 1
        assert added, f"trial {trial}: no human edit was made"
        assert lost == 0, f"trial {trial}: human text lost\n{stderr[-3000:]}"
        assert replies == 1, f"trial {trial}: {replies} replies\n{stderr[-3000:]}"
        assert count_replies(text, "Other") == 0
        euler = section_text(text, "Euler")
        assert all(euler.index(SIGNATURE) < euler.index(snippet) for snippet in ends), euler
    if race == "same second as the revision read":
        FIGURES["same-second human edits"] += same_second


#: What the asker saves below the question while the bot writes its answer (a follow-up to that answer).
FOLLOW_UP = ("::Also his students? [[User:Alice|Alice]] ([[User talk:Alice|talk]]) 12:10, 20 November 2026 (UTC)")
IN_FLIGHT_LOG = ("'Euler': a follow-up was saved while the reply was written; the reply goes above it, and the "
                 "follow-up is answered next")


def _save_in_flight(rig, page: str, line: str, when: str, editor=None) -> list[dict]:
    """Have *line* saved at the end of the thread "Euler" of *page* once, while the agent works (at the model's
    first call) or at the save (the bot's edit held at the proxy until the line has landed); the edits made."""
    editor = editor or rig.mediawiki.human()
    made: list[dict] = []

    def save(*_) -> None:
        if not made:
            text = rig.mediawiki.page_text(page)
            made.append(editor.edit(page, text.rstrip("\n") + "\n" + line + "\n", "a line saved in flight"))

    rig.wiki.clear()
    rig.hooks.pop("model", None)
    if when == "while the agent works":
        rig.hooks["model"] = save
    else:
        rig.wiki.add(Fault("a line saved before the bot's save", wiki_action("edit", title=page), save))
    return made


def _asked(rig, page: str) -> str:
    """The forum *page* with a question "Euler" under another thread; the question's line."""
    rig.mediawiki.human().edit(page, LEAD + question("Other", "{{nobots}} An older question, for humans.", 1)
                               + question("Euler", "Who advised Euler?", 2))
    return question("Euler", "Who advised Euler?", 2).split("\n")[2]


def _first_answer_above(text: str, asked: str, line: str) -> str:
    """The thread "Euler" of *text*, checked to hold the bot's first answer right after *asked* and above *line*."""
    euler = section_text(text, "Euler")
    assert euler.startswith(f"\n{asked}\n:"), euler  # the answer, directly under the question
    assert line in euler and euler.index(SIGNATURE) < euler.index(line), euler
    return euler


@pytest.mark.parametrize("when", ["while the agent works", "at the save"])
def test_a_follow_up_saved_while_the_reply_is_written_is_answered_below_it_after_the_answer_it_follows(rig, when):
    page = f"Wikidata:Faults/follow-up in flight, {when}"
    asked = _asked(rig, page)
    made = _save_in_flight(rig, page, FOLLOW_UP, when)
    done = rig.run(page, "--once", "--live", "--backlog")
    assert done.code == 0 and made, done.stderr[-3000:]
    _first_answer_above(rig.mediawiki.page_text(page), asked, FOLLOW_UP)
    assert IN_FLIGHT_LOG in done.stderr, done.stderr[-3000:]
    if when == "at the save":  # the wiki refused the save built on the revision read: read, locate, insert again
        assert "edit conflict on" in done.stderr, done.stderr[-3000:]
    for _ in range(2):  # the follow-up is answered once, at the next pass
        done = rig.run(page, "--once", "--live")
        assert done.code == 0, done.stderr[-3000:]
    text = rig.mediawiki.page_text(page)
    euler = _first_answer_above(text, asked, FOLLOW_UP)
    answer = euler.split(FOLLOW_UP + "\n", 1)[1]
    assert answer.startswith(":::{{re|1=Alice}} ") and SIGNATURE in answer, euler  # below it, to the asker
    replies = count_replies(text, "Euler")
    FIGURES["double replies"] += max(0, replies - 2)
    FIGURES["human edits racing"] += 1
    assert replies == 2 and count_replies(text, "Other") == 0, done.stderr[-3000:]


@pytest.mark.parametrize("line", ["unsigned", "a third person's"])
def test_a_line_saved_while_the_reply_is_written_that_is_no_follow_up_stays_below_it_unanswered(rig, line):
    page = f"Wikidata:Faults/line in flight, {line}"
    asked = _asked(rig, page)
    editor = rig.mediawiki.human()
    if line == "unsigned":
        saved = ":Me too, I would like to know."
    else:  # someone not logged in, signing with their address, who does not ping the bot
        editor = HumanEditor(editor.api_url, urllib.request.build_opener())
        saved = (":Bernoulli, I think. [[Special:Contributions/127.0.0.1|127.0.0.1]] ([[User talk:127.0.0.1|talk]])"
                 " 12:11, 20 November 2026 (UTC)")
    made = _save_in_flight(rig, page, saved, "while the agent works", editor)
    done = rig.run(page, "--once", "--live", "--backlog")
    assert done.code == 0 and made, done.stderr[-3000:]
    if line != "unsigned":
        users = {revision["revid"]: revision["user"] for revision in rig.mediawiki.revisions(page)}
        assert users[made[0]["newrevid"]] == "127.0.0.1"
    assert "'Euler': 1 line was saved in the thread while the reply was written" in done.stderr, done.stderr[-3000:]
    assert rig.run(page, "--once", "--live").code == 0
    text = rig.mediawiki.page_text(page)
    _first_answer_above(text, asked, saved)
    assert count_replies(text, "Euler") == 1


def test_with_the_state_file_lost_a_follow_up_saved_while_the_reply_was_written_is_not_answered_twice(rig):
    page = "Wikidata:Faults/follow-up in flight, state lost"
    asked = _asked(rig, page)
    made = _save_in_flight(rig, page, FOLLOW_UP, "while the agent works")
    assert rig.run(page, "--once", "--live", "--backlog").code == 0 and made
    rig.bot.state_path().unlink()
    done = rig.run(page, "--once", "--live")
    assert done.code == 0, done.stderr[-3000:]
    text = rig.mediawiki.page_text(page)
    _first_answer_above(text, asked, FOLLOW_UP)
    # Without the record of the revision the answer was written from, a comment older than the bot's reply is taken
    # as one the answer covered: the follow-up saved in flight waits for the asker to ask again, never answered twice.
    replies = count_replies(text, "Euler")
    FIGURES["double replies"] += max(0, replies - 1)
    assert replies == 1, done.stderr[-3000:]


# --- a question merged into an older thread as a subsection ---------------------------------------------------

MERGED_QUESTION = "Who advised Euler?"


def merged_into(text: str, asked: str, into: str, heading: str | None = None) -> str:
    """*text* with the section *asked* moved to the end of the section *into* as a subsection (titled *heading*,
    else its own heading), as an editor merges two threads about one thing: its lines cut and pasted, nothing
    else changed."""
    parts = re.split(r"(?m)^(?=== [^=])", text)
    moved = next(part for part in parts if part.startswith(f"== {asked} =="))
    parts.remove(moved)
    body = moved.split("\n", 1)[1].rstrip("\n")
    index = next(index for index, part in enumerate(parts) if part.startswith(f"== {into} =="))
    parts[index] = parts[index].rstrip("\n") + f"\n\n=== {heading or asked} ===\n{body}\n\n"
    return "".join(parts).rstrip("\n") + "\n"


def assert_answered_under_the_subsection(rig, page: str, subheading: str, asked: str, replies: int = 1) -> str:
    """The page holds *replies* replies of the bot, the last one under the subsection *subheading*, after the
    question *asked*, before anything that follows the subsection, in the wikitext and on the rendered page;
    the page's text is returned."""
    text = rig.mediawiki.page_text(page)
    assert text.count(SIGNATURE) == replies, text
    start = text.index(f"\n=== {subheading} ===\n")
    end = text.find("\n==", start + 1)
    thread = text[start:end if end != -1 else len(text)]
    assert asked in thread and SIGNATURE in thread.split(asked, 1)[1], thread
    assert thread.count(SIGNATURE) == 1, thread
    assert thread.split(asked, 1)[1].split("\n", 1)[1].startswith(":"), thread  # the next line replies to it
    html = rig.mediawiki.rendered_html(page)
    shown = html.index(f'id="{subheading.replace(" ", "_")}"')
    after = html[shown:]
    later_heading = re.search(r"<h[1-3][ >]", after)
    visible = after[:later_heading.start()] if later_heading else after
    assert f"User:{BOT_USER}" in visible.split(asked, 1)[1], visible
    return text


@pytest.mark.parametrize("renamed", [None, "Students of Euler"])
def test_a_question_merged_into_an_older_thread_while_the_bot_answers_it_is_answered_there_once(rig, renamed):
    page = f"Wikidata:Faults/merged while answered {renamed or 'as it was'}"
    human = rig.mediawiki.human()
    older = question("Older", "Who advised Gauss?", 1) + question("Other", "{{nobots}} Another one, for humans.", 2)
    human.edit(page, LEAD + older)
    assert rig.run(page, "--once", "--live").code == 0  # both older sections: backlog
    human.edit(page, rig.mediawiki.page_text(page) + question("Euler", MERGED_QUESTION, 3))
    merges: list[dict] = []

    def merge() -> None:  # while the agent answers, an editor merges the question into the older thread
        rig.hooks.pop("model")
        merges.append(human.edit(page, merged_into(rig.mediawiki.page_text(page), "Euler", "Older", renamed),
                                 "merge the Euler thread into Older"))

    rig.hooks["model"] = merge
    done = rig.run(page, "--once", "--live")
    stderr = done.stderr
    assert done.code == 0, stderr[-3000:]
    assert merges, "the merge was not made while the agent answered"
    subheading = renamed or "Euler"
    text = assert_answered_under_the_subsection(rig, page, subheading, MERGED_QUESTION)
    lost = sum(len(snippet) for snippet in ("Who advised Gauss?", "Another one, for humans.", MERGED_QUESTION)
               if snippet not in text)
    FIGURES["lost human characters"] += lost
    FIGURES["double replies"] += max(0, text.count(SIGNATURE) - 1)
    assert lost == 0 and "\n== Euler ==" not in text
    assert f"'Euler' was merged into 'Older' as a subsection (revision {merges[0]['newrevid']}): answered there" \
        in stderr, stderr[-3000:]
    reply = rig.bot.bot_edits(page)[0]
    assert reply["comment"].startswith(f"/* {subheading} */"), reply
    statuses = rig.statuses(page)
    assert [status for key, (status, _) in statuses.items() if key.startswith("Euler @ r")] == ["answered"], statuses
    again = rig.run(page, "--once", "--live")  # nothing more, not as the older thread's follow-up either
    assert again.code == 0 and rig.mediawiki.page_text(page) == text, again.stderr[-3000:]
    assert rig.statuses(page) == statuses
    FIGURES["human edits racing"] += 1


@pytest.mark.parametrize("older", ["backlog", "answered by the bot"])
def test_a_question_merged_into_an_older_thread_between_two_passes_is_answered_there_once(rig, older):
    page = f"Wikidata:Faults/merged between passes, older {older}"
    human = rig.mediawiki.human()
    human.edit(page, LEAD + question("Older", "Who advised Gauss?", 1)
               + question("Other", "{{nobots}} Another one, for humans.", 2))
    assert rig.run(page, "--once", "--live", *(["--backlog"] if older == "answered by the bot" else [])).code == 0
    before = 1 if older == "answered by the bot" else 0
    assert rig.mediawiki.page_text(page).count(SIGNATURE) == before
    # Asked unsigned: the pass records it waiting.
    human.edit(page, rig.mediawiki.page_text(page) + f"\n== Euler ==\n{MERGED_QUESTION}\nAnd whom did they "
               "advise?\n")
    assert rig.run(page, "--once", "--live").code == 0
    assert [status for key, (status, _) in rig.statuses(page).items() if key.startswith("Euler @ r")] == ["waiting"]
    # Signed, then merged into the older thread (whose asker is the same), both before the next pass.
    human.edit(page, rig.mediawiki.page_text(page).replace(
        "And whom did they advise?", "And whom did they advise? [[User:Alice|Alice]] ([[User talk:Alice|talk]]) "
        "12:05, 20 November 2026 (UTC)"), "sign")
    merge = human.edit(page, merged_into(rig.mediawiki.page_text(page), "Euler", "Older"), "merge into Older")
    done = rig.run(page, "--once", "--live")
    stderr = done.stderr
    assert done.code == 0, stderr[-3000:]
    text = assert_answered_under_the_subsection(rig, page, "Euler", "And whom did they advise?", before + 1)
    FIGURES["double replies"] += max(0, text.count(SIGNATURE) - before - 1)
    assert "Who advised Gauss?" in text and MERGED_QUESTION in text and "Another one, for humans." in text
    assert f"'Euler' was merged into 'Older' as a subsection (revision {merge['newrevid']}): answered there" \
        in stderr, stderr[-3000:]
    statuses = rig.statuses(page)
    assert [status for key, (status, _) in statuses.items() if key.startswith("Euler @ r")] == ["answered"], statuses
    assert not any(" / r" in key for key in statuses), statuses  # never a follow-up of the older thread
    again = rig.run(page, "--once", "--live")
    assert again.code == 0 and rig.mediawiki.page_text(page) == text, again.stderr[-3000:]
    FIGURES["faults injected"] += 1


# --- faults with the watcher running -------------------------------------------------------------------------

def _wiki_faults(page: str) -> list[list[Fault]]:
    edit = wiki_action("edit", title=page)

    def login(path: str, params: dict) -> bool:
        return params.get("action") in ("login", "clientlogin")

    return [
        [Fault("wiki 503", lambda path, params: params.get("action") == "query",
               Reply(503, "Service Unavailable", {"Retry-After": "1", "Content-Type": "text/html"}))],
        [Fault("wiki maxlag", edit, api_error("maxlag", "Waiting for db1: 7 seconds lagged", retry_after=1))],
        [Fault("wiki readonly", edit, api_error("readonly", "The wiki is currently in read-only mode"))],
        [Fault("wiki edit conflict", edit, api_error("editconflict", "Edit conflict"))],
        [Fault("wiki badtoken", edit, api_error("badtoken", "Invalid CSRF token"))],
        [Fault("wiki assertuserfailed", edit, api_error("assertuserfailed", "You are no longer logged in"))],
        # The session is gone (the edit's assert fails, the user is anonymous) and logging in again fails.
        # pywikibot then keeps the anonymous user info and a login "in progress" for good (its next save ends
        # in KeyError 'rights'); the write layer must log in again once the wiki is back.
        [Fault("wiki failed re-login", edit, api_error("assertuserfailed", "Session expired")),
         Fault("wiki failed re-login (session gone)", lambda path, params: "userinfo" in params.get("meta", ""),
               Reply(200, {"batchcomplete": True, "query": {"userinfo": {"id": 0, "name": "127.0.0.1",
                                                                          "anon": True}}}), times=3),
         Fault("wiki failed re-login (login refused)", login, Reply(503, "Service Unavailable",
                                                                    {"Content-Type": "text/html"}), times=4)],
        [Fault("wiki blocked bot", edit, api_error("blocked", "You have been blocked from editing"))],
    ]


def _model_faults() -> list[list[Fault] | str]:
    chat = path_contains("/chat/completions")
    return [
        [Fault("model 429 Retry-After", chat, Reply(429, {"error": {"message": "Rate limit reached",
                                                                     "type": "requests"}}, {"Retry-After": "1"}))],
        [Fault("model 500", chat, Reply(500, {"error": {"message": "The server had an error"}}))],
        [Fault("model stalled then dropped", chat, "drop", hold_seconds=2)],
        [Fault("model malformed JSON", chat, Reply(200, '{"id": "x", "choices": [{"message": '))],
        "model refused connection",
    ]


def _query_faults() -> list[list[Fault]]:
    sparql = path_contains("sparql")
    return [
        [Fault("query service 429", sparql, Reply(429, "Too Many Requests", {"Retry-After": "1",
                                                                                "Content-Type": "text/plain"}))],
        [Fault("query service 500", sparql, Reply(500, "Internal Server Error", {"Content-Type": "text/plain"}))],
        [Fault("query service timeout", sparql, Reply(500, "SPARQL-QUERY: queryStr=...\n"
                                                           "java.util.concurrent.TimeoutException\n\tat java...",
                                                      {"Content-Type": "text/plain"}))],
    ]


def _watching(rig, human, page: str, settings: str = "") -> tuple[subprocess.Popen, LogReader]:
    """The watcher started live on *page* (its lead written by *human*), passing every 0.02 minutes and retrying a
    question up to 30 times, with more *settings* of bot.ini; it and its log."""
    human.edit(page, LEAD)
    (rig.bot.directory / "bot.ini").write_text("[bot]\ninterval_minutes = 0.02\nretry_minutes = 0.01\n"
                                               "max_attempts = 30\n" + settings)
    watcher = rig.start(page, "--live", "--config", str(rig.bot.directory / "bot.ini"))
    return watcher, LogReader(watcher)


def _passes(log: LogReader, more: int, what: str) -> None:
    """Wait until the watcher has made *more* passes (its log says so) from now."""
    done = log.count("pass over")
    wait_for(lambda: log.count("pass over") >= done + more, PATIENCE, f"{more} passes ({what})", log.death)


def test_the_watcher_survives_injected_faults_and_answers_every_question(rig):
    page = "Wikidata:Faults/watcher"
    human = rig.mediawiki.human()
    watcher, log = _watching(rig, human, page, "max_sections_per_pass = 3\n")
    try:
        wait_for(lambda: log.count("pass over"), PATIENCE, "the first pass", log.death)
        rounds = []
        for number in range(13):  # two wiki faults a round: the second meets the retry of the first
            wiki, model, query = _wiki_faults(page), _model_faults(), _query_faults()  # fresh, unfired
            rounds.append([wiki[number % len(wiki)], wiki[(number + len(wiki) // 2) % len(wiki)],
                           model[number % len(model)], query[number % len(query)]])
        headings = []
        for number, faults in enumerate(rounds):
            heading = f"Question {number}"
            headings.append(heading)
            armed: list[Fault] = []
            refused = False
            for group in faults:
                if group == "model refused connection":
                    refused = True
                    continue
                for fault in group:
                    proxy = rig.wiki if fault.name.startswith("wiki") else (
                        rig.model if fault.name.startswith("model") else rig.query)
                    armed.append(proxy.add(fault))
            text = rig.mediawiki.page_text(page)
            human.edit(page, text.rstrip("\n") + "\n" + question(heading, f"Question {number}: who advised Euler?",
                                                                 number))
            if refused:  # the watcher meets it if it calls the model in that window; counted apart
                rig.model.refuse(4)
                FIGURES["model refusal windows"] += 1
            wait_for(lambda: count_replies(rig.mediawiki.page_text(page), heading) >= 1, 120,
                     f"an answer to {heading} (faults {[fault.name for fault in armed]})", log.death)
            FIGURES["faults injected"] += sum(fault.fired for fault in armed)
            KINDS.update({fault.name: fault.fired for fault in armed if fault.fired})
            for proxy in (rig.wiki, rig.model, rig.query):
                proxy.clear()
        # The stop page halts edits within one pass; emptying it lets them resume.
        rig.mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "Stop: checking the bot.", "stop the bot")
        text = rig.mediawiki.page_text(page)
        human.edit(page, text.rstrip("\n") + "\n" + question("While stopped", "Who advised Euler?", 59))
        headings.append("While stopped")
        _passes(log, 3, "stopped")
        assert count_replies(rig.mediawiki.page_text(page), "While stopped") == 0
        rig.mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "", "resume")
        wait_for(lambda: count_replies(rig.mediawiki.page_text(page), "While stopped") >= 1, 120,
                 "edits to resume after the stop page was emptied", log.death)
        # The stop page filled while the agent works: the save is refused; emptying it lets edits resume.
        stop_now = [True]

        def stop_during_the_run() -> None:
            if stop_now:
                stop_now.clear()
                rig.mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "Stop, during a run.", "stop the bot")

        rig.hooks["model"] = stop_during_the_run
        text = rig.mediawiki.page_text(page)
        human.edit(page, text.rstrip("\n") + "\n" + question("Stopped mid-run", "Who advised Euler?", 58))
        headings.append("Stopped mid-run")
        wait_for(lambda: not stop_now, PATIENCE, "the agent to run", log.death)
        _passes(log, 3, "stopped during a run")
        assert count_replies(rig.mediawiki.page_text(page), "Stopped mid-run") == 0
        rig.hooks.pop("model")
        rig.mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "", "resume")
        wait_for(lambda: count_replies(rig.mediawiki.page_text(page), "Stopped mid-run") >= 1, 120,
                 "edits to resume after a stop raised during a save", log.death)
        _passes(log, 3, "none may reply twice")
        assert watcher.poll() is None, "the watcher died"
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=120)
    stderr = log.close()
    rig.logs.append(stderr)
    text = rig.mediawiki.page_text(page)
    replies = {heading: count_replies(text, heading) for heading in headings}
    FIGURES["watcher questions"] += len(headings)
    FIGURES["double replies"] += sum(max(0, count - 1) for count in replies.values())
    FIGURES["unanswered sections"] += sum(count == 0 for count in replies.values())
    statuses = rig.statuses(page)
    FIGURES["failures recorded then answered"] += sum(attempts > 0 and status == "answered"
                                                      for status, attempts in statuses.values())
    assert watcher.returncode == 0, stderr[-3000:]
    assert all(count == 1 for count in replies.values()), (replies, stderr[-3000:])
    assert {status for key, (status, _) in statuses.items() if key.split(" @")[0] in headings} == {"answered"}, \
        statuses
    assert FIGURES["faults injected"] >= 50
    assert "sk-test-secret-value" not in stderr


def test_backlog_is_kept_when_the_first_pass_cannot_reach_the_wiki(rig):
    page = "Wikidata:Faults/backlog"
    rig.mediawiki.human().edit(page, LEAD + question("Old question", "Who advised Euler?", 3))
    (rig.bot.directory / "bot.ini").write_text("[bot]\ninterval_minutes = 0.02\nretry_minutes = 0.01\n")
    # The bot logs in, then every page read fails: its first passes cannot see the page.
    outage = rig.wiki.add(Fault("wiki 503 at the first passes", lambda path, params: "titles" in params,
                                Reply(503, "Service Unavailable", {"Content-Type": "text/html"}), times=1000))
    watcher = rig.start(page, "--live", "--backlog", "--config", str(rig.bot.directory / "bot.ini"))
    log = LogReader(watcher)
    try:
        wait_for(lambda: outage.fired >= 3, PATIENCE, "the first passes to meet the outage", log.death)
        rig.wiki.clear()
        FIGURES["faults injected"] += outage.fired
        wait_for(lambda: count_replies(rig.mediawiki.page_text(page), "Old question") >= 1, 120,
                 "the backlog question to be answered once the wiki is back", log.death)
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=120)
    stderr = log.close()
    rig.logs.append(stderr)
    assert count_replies(rig.mediawiki.page_text(page), "Old question") == 1, stderr[-3000:]


def test_a_second_stop_signal_during_a_save_stops_cleanly_and_the_save_is_recorded(rig):
    page = "Wikidata:Faults/two signals"
    rig.mediawiki.human().edit(page, LEAD)
    (rig.bot.directory / "bot.ini").write_text("[bot]\ninterval_minutes = 0.02\n")
    current: dict = {}

    def two_signals(params) -> None:  # a supervisor repeating its SIGTERM, while the wiki stores the reply
        current["process"].send_signal(signal.SIGTERM)
        # The second once the first was taken (two signals pending together are delivered once).
        wait_for(lambda: log.count("then stopping"), PATIENCE, "the first SIGTERM to be taken", log.death)
        current["process"].send_signal(signal.SIGTERM)

    watcher = current["process"] = rig.start(page, "--live", "--config", str(rig.bot.directory / "bot.ini"))
    log = LogReader(watcher)
    try:
        wait_for(lambda: log.count("pass over") >= 1, PATIENCE, "the first look", log.death)
        signals = rig.wiki.add(Fault("two SIGTERMs during the save", wiki_action("edit", title=page), two_signals))
        rig.mediawiki.human().edit(page, LEAD + question("Euler", "Who advised Euler?", 5))
        watcher.wait(timeout=120)
    finally:
        if watcher.poll() is None:
            watcher.kill()
    stderr = log.close()
    rig.logs.append(stderr)
    assert signals.fired == 1
    assert watcher.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr and "closed database" not in stderr and "already stopping" in stderr
    assert count_replies(rig.mediawiki.page_text(page), "Euler") == 1
    assert [status for status, _ in rig.statuses(page).values()] == ["answered"], stderr[-3000:]


def test_a_saved_revision_other_than_what_was_sent_is_undone_at_once(rig):
    page = "Wikidata:Faults/stored otherwise"
    rig.mediawiki.human().edit(page, LEAD + question("Euler", "Who advised Euler?", 4))

    def normalise(params):  # what the wiki stores is not what the bot sent (as a strip marker would do)
        return {**params, "text": params["text"].replace("Ask your SPARQL questions", "Ask your questions")}

    rig.wiki.add(Fault("wiki stores other text", wiki_action("edit", title=page, text="*"), Rewrite(normalise),
                       times=1000))
    done = rig.run(page, "--once", "--live", "--backlog")
    stderr = done.stderr
    assert done.code == 0, stderr[-3000:]
    assert rig.mediawiki.page_text(page) == LEAD + question("Euler", "Who advised Euler?", 4).rstrip("\n")
    bot = [revision for revision in rig.mediawiki.revisions(page) if revision["user"] == BOT_USER]
    assert len(bot) == 2 and bot[0]["comment"].startswith("undo the bot's reply"), bot
    assert "differs from what was sent; the bot's edit was undone" in stderr
    # The wiki would store it otherwise again: recorded as refused, with the reason, for when the page changes.
    assert [status for status, _ in rig.statuses(page).values()] == ["refused"]


# --- a page's history that blanks, reverts, undoes, moves, archives and restores -----------------------------

def sections_of(text: str) -> dict[str, str]:
    """Each section's text, by heading (level 2)."""
    found = {}
    for part in ("\n" + text).split("\n== ")[1:]:
        heading, _, body = part.partition(" ==\n")
        found[heading] = body
    return found


def replies_by_section(text: str) -> dict[str, int]:
    return {heading: body.count(SIGNATURE) for heading, body in sections_of(text).items()}


def _blank_then_revert(rig, page, text, more):
    rig.mediawiki.edit_as_human(page, "", "blanking")
    rig.mediawiki.edit_as_human(page, text + more, "revert blanking")


def _blank_seen_then_reverted(rig, page, text, more):
    rig.mediawiki.edit_as_human(page, "", "blanking")
    assert rig.run(page, "--once", "--live").code == 0
    rig.mediawiki.edit_as_human(page, text + more, "revert blanking")


def _blank_undone(rig, page, text, more):
    rig.mediawiki.edit_as_human(page, "", "blanking")
    human = rig.mediawiki.human()
    blank = rig.mediawiki.revisions(page)[0]["revid"]
    token = human.call(action="query", meta="tokens")["query"]["tokens"]["csrftoken"]
    done = human.call(post=True, action="edit", title=page, undo=str(blank), summary="undo", token=token)
    assert done.get("edit", {}).get("result") == "Success", done
    if more:
        rig.mediawiki.edit_as_human(page, rig.mediawiki.page_text(page) + more, "a new question")


def _reordered(rig, page, text, more, order, summary):
    """The page with the sections named in *order*, in that order (others left out), and *more* after them."""
    parts = sections_of(text)
    lead = text.split("\n== ", 1)[0]
    rig.mediawiki.edit_as_human(page, lead + "".join(f"\n== {name} ==\n{parts[name]}" for name in order) + more,
                                summary)


def _moved_below_the_next(rig, page, text, more):
    _reordered(rig, page, text, more, ["Old one", "Asked", "Old two"], "move a section")


def _moved_to_the_top(rig, page, text, more):
    _reordered(rig, page, text, more, ["Asked", "Old one", "Old two"], "move a section to the top")


def _archived_then_restored(rig, page, text, more):
    _reordered(rig, page, text, "", ["Old one", "Old two"], "archive the answered section")
    rig.mediawiki.edit_as_human(f"{page}/Archive", f"== Asked ==\n{sections_of(text)['Asked']}", "archive")
    assert rig.run(page, "--once", "--live").code == 0
    rig.mediawiki.edit_as_human(page, text + more, "bring the section back from the archive")


def _heading_readded_by_someone_else(rig, page, text, more):
    rig.mediawiki.edit_as_human(page, text.replace("\n== Asked ==\n", "\n"), "remove a heading")
    assert rig.run(page, "--once", "--live").code == 0
    rig.mediawiki.human().edit(page, rig.mediawiki.page_text(page).replace(
        "\nWho advised Euler?", "\n== Asked ==\nWho advised Euler?", 1) + more, "put the heading back")


HISTORIES = {"blanked and reverted": _blank_then_revert, "blank seen by a pass, then reverted":
             _blank_seen_then_reverted, "blank undone": _blank_undone, "moved below the next": _moved_below_the_next,
             "moved to the top": _moved_to_the_top, "archived, then restored": _archived_then_restored,
             "heading re-added by someone else": _heading_readded_by_someone_else}


@pytest.mark.parametrize("history", list(HISTORIES))
def test_a_history_that_blanks_reverts_and_moves_never_makes_the_bot_answer_twice(rig, history):
    page = f"Wikidata:Faults/history {history}"
    rig.mediawiki.edit_as_human(page, LEAD + question("Old one", "Who founded Basel?", 1)
                                + question("Old two", "Which rivers cross Basel?", 2))
    assert rig.run(page, "--once", "--live").code == 0  # the first look: both are backlog
    rig.mediawiki.edit_as_human(page, rig.mediawiki.page_text(page) + question("Asked", "Who advised Euler?", 3))
    assert rig.run(page, "--once", "--live").code == 0
    text = rig.mediawiki.page_text(page)
    assert replies_by_section(text) == {"Old one": 0, "Old two": 0, "Asked": 1}
    for number, mixed in enumerate((False, True)):  # alone, then with a new question in the same edits
        more = question(f"New {number}", "Who advised Bernoulli?", 10 + number) if mixed else ""
        HISTORIES[history](rig, page, rig.mediawiki.page_text(page).rstrip("\n") + "\n", more)
        done = rig.run(page, "--once", "--live")
        assert done.code == 0, done.stderr[-3000:]
        replies = replies_by_section(rig.mediawiki.page_text(page))
        FIGURES["history faults"] += 1
        FIGURES["double replies"] += sum(max(0, count - 1) for count in replies.values())
        FIGURES["backlog answered"] += replies.get("Old one", 0) + replies.get("Old two", 0)
        expected = {"Old one": 0, "Old two": 0, "Asked": 1, **({"New 1": 1} if mixed else {})}
        assert replies == expected, (history, mixed, done.stderr[-3000:])
    statuses = {key.split(" @")[0]: status for key, (status, _) in rig.statuses(page).items()}
    assert statuses["Old one"] == statuses["Old two"] == "backlog" and statuses["Asked"] == "answered", statuses


# --- the watcher heals itself ---------------------------------------------------------------------------------

def test_a_session_the_wiki_forgot_and_a_failed_login_heal_and_questions_asked_meanwhile_are_answered(rig):
    page = "Wikidata:Faults/session"
    human = rig.mediawiki.human()
    watcher, log = _watching(rig, human, page)
    try:
        wait_for(lambda: log.count("pass over"), PATIENCE, "the first pass", log.death)
        # The wiki forgets the bot's session: its next save is refused (assert=user), pywikibot's own re-login
        # reuses the login token of the forgotten session and fails ("Unable to continue login").
        expired = rig.wiki.add(Fault("wiki forgot the session", lambda path, params: True, ExpireSession(),
                                     times=100_000))
        human.edit(page, rig.mediawiki.page_text(page) + question("Before", "Who advised Euler?", 1))
        wait_for(lambda: log.count("Unable to continue login"), PATIENCE, "the failed re-login", log.death)
        human.edit(page, rig.mediawiki.page_text(page) + question("Meanwhile", "Who advised Euler?", 2))
        for heading in ("Before", "Meanwhile"):
            wait_for(lambda heading=heading: count_replies(rig.mediawiki.page_text(page), heading) >= 1, 120,
                     f"an answer to {heading!r} once the bot logged in again", log.death)
        _passes(log, 3, "none may reply twice")
        KINDS["wiki forgot the session"] += expired.fired
        FIGURES["faults injected"] += 1
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=120)
    stderr = log.close()
    rig.logs.append(stderr)
    text = rig.mediawiki.page_text(page)
    assert watcher.returncode == 0, stderr[-3000:]
    assert count_replies(text, "Before") == count_replies(text, "Meanwhile") == 1, stderr[-3000:]
    assert "Unable to continue login" in stderr and "again, with a fresh session" in stderr
    FIGURES["watcher questions"] += 2


def asked_after_a_first_look(rig, page: str, minute: int) -> str:
    """*page* with its lead, looked at once by the bot, then asked "Euler" (at *minute*): the text asked."""
    human = rig.mediawiki.human()
    human.edit(page, LEAD)
    assert rig.run(page, "--once", "--live").code == 0
    asked = rig.mediawiki.page_text(page) + question("Euler", "Who advised Euler?", minute)
    human.edit(page, asked)
    return asked


def test_a_refusal_that_will_not_pass_by_itself_is_recorded_and_tried_again_when_the_page_changes(rig):
    page = "Wikidata:Faults/content model"
    human = rig.mediawiki.human()
    asked = asked_after_a_first_look(rig, page, 5)

    def content_model(model: str, text: str) -> None:
        token = human.call(action="query", meta="tokens")["query"]["tokens"]["csrftoken"]
        done = human.call(post=True, action="edit", title=page, text=text, contentmodel=model, token=token)
        assert done.get("edit", {}).get("result") == "Success", done

    # While the model answers, the page stops being wikitext: the save is refused, for a reason that stays.
    rig.hooks["model"] = lambda: (content_model("text", asked), rig.hooks.pop("model"))
    for _ in range(4):  # whatever the number of passes, refused is not given up
        done = rig.run(page, "--once", "--live")
        assert done.code == 0, done.stderr[-3000:]
    [(status, attempts)] = rig.statuses(page).values()
    record = next(iter(rig.bot.records(page=page).values()))
    assert (status, attempts) == ("refused", 0) and "content model" in record.last_error, record
    assert "refused by the edit check, tried again once the page changes" in "".join(rig.logs)
    content_model("wikitext", asked)  # the page changes: the same answer is posted
    done = rig.run(page, "--once", "--live")
    assert done.code == 0 and "posting the answer" in done.stderr, done.stderr[-3000:]
    assert count_replies(rig.mediawiki.page_text(page), "Euler") == 1
    assert [status for status, _ in rig.statuses(page).values()] == ["answered"]
    FIGURES["refusals recorded, then answered"] += 1


CUT_PARSE = Reply(200, {"batchcomplete": True, "warnings": {"result": {"warnings": (
    "This result was truncated because it would otherwise be larger than the limit of 8,388,608 bytes.")}}})


def test_a_parse_over_the_apis_answer_limit_is_asked_for_in_two_parts_and_the_reply_is_checked_and_posted(rig):
    page = "Wikidata:Faults/large page"
    asked_after_a_first_look(rig, page, 8)
    # A page near the wiki's largest (2 MiB): its HTML and the lists of what it holds, together, are more than
    # the API answers at once (8 MiB); each alone fits. Before the reply and after it.
    combined = rig.wiki.add(Fault("wiki parse over the answer size limit, its parts within it", lambda path, params:
                                  params.get("action") == "parse" and "text" in params.get("prop", "").split("|")
                                  and "|" in params.get("prop", ""), CUT_PARSE, times=100))
    done = rig.run(page, "--once", "--live")
    assert done.code == 0 and 'answered "Euler"' in done.stderr, done.stderr[-3000:]
    assert combined.fired >= 2 and count_replies(rig.mediawiki.page_text(page), "Euler") == 1
    assert [status for status, _ in rig.statuses(page).values()] == ["answered"]
    KINDS["wiki parse over the answer size limit, its parts within it"] += combined.fired
    FIGURES["faults injected"] += combined.fired


def test_a_page_whose_parse_is_over_the_apis_answer_limit_is_refused_with_the_reason_and_answered_later(rig):
    page = "Wikidata:Faults/too large to check"
    asked_after_a_first_look(rig, page, 8)
    # A page whose HTML alone is more than the API answers at once (8 MiB): the parse of the revision the reply
    # is built on is cut, whole and as HTML alone.
    cut = rig.wiki.add(Fault("wiki parse over the answer size limit", lambda path, params: params.get("action") ==
                             "parse" and "oldid" in params and "text" in params.get("prop", "").split("|"),
                             CUT_PARSE, times=100))
    for _ in range(3):
        done = rig.run(page, "--once", "--live")
        assert done.code == 0 and "unexpected error" not in done.stderr, done.stderr[-3000:]
    record = next(iter(rig.bot.records(page=page).values()))
    assert (record.status, record.attempts) == ("refused", 0) and "larger than its API" in record.last_error, record
    assert cut.fired == 2 and rig.bot.bot_edits(page) == []  # one pass: the whole parse, then its HTML alone
    KINDS["wiki parse over the answer size limit"] += cut.fired
    FIGURES["faults injected"] += cut.fired
    rig.wiki.clear()  # the page is archived: it changes, and its parse fits again
    archived = rig.mediawiki.page_text(page).replace(LEAD, LEAD + "Old sections are archived.\n", 1)
    rig.mediawiki.human().edit(page, archived)
    done = rig.run(page, "--once", "--live")
    assert done.code == 0 and "posting the answer" in done.stderr, done.stderr[-3000:]
    assert count_replies(rig.mediawiki.page_text(page), "Euler") == 1
    FIGURES["refusals recorded, then answered"] += 1


# --- the bot's own files --------------------------------------------------------------------------------------

def test_a_state_file_that_is_not_a_database_is_refused_in_one_line_and_left_as_it_is(rig):
    page = "Wikidata:Faults/state"
    rig.mediawiki.human().edit(page, LEAD + question("Euler", "Who advised Euler?", 6))
    damaged = rig.bot.state_path("damaged.sqlite")
    damaged.write_bytes(b"this is not a database, but it is someone's file\n" * 200)
    before = damaged.read_bytes()
    done = rig.run(page, "--once", "--live", state="damaged.sqlite")
    assert done.code == 2
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "is not a database" in line and "left as it is" in line and "Traceback" not in done.stderr
    assert damaged.read_bytes() == before and rig.bot.bot_edits(page) == []
    FIGURES["faults injected"] += 1


def test_with_the_state_file_lost_questions_asked_since_the_bots_last_reply_are_answered(rig):
    page = "Wikidata:Faults/state lost"
    human = rig.mediawiki.human()
    human.edit(page, LEAD + question("Old one", "Who founded Basel?", 1))
    assert rig.run(page, "--once", "--live").code == 0
    human.edit(page, rig.mediawiki.page_text(page) + question("Asked", "Who advised Euler?", 2))
    assert rig.run(page, "--once", "--live").code == 0
    rig.bot.state_path().unlink()  # lost; meanwhile a question is asked
    human.edit(page, rig.mediawiki.page_text(page) + question("While down", "Who advised Bernoulli?", 3))
    done = rig.run(page, "--once", "--live")
    assert done.code == 0, done.stderr[-3000:]
    replies = replies_by_section(rig.mediawiki.page_text(page))
    FIGURES["double replies"] += sum(max(0, count - 1) for count in replies.values())
    FIGURES["backlog answered"] += replies["Old one"]
    assert replies == {"Old one": 0, "Asked": 1, "While down": 1}, done.stderr[-3000:]
    [line] = [line for line in done.stderr.splitlines() if "first look at" in line]
    assert "2 sections recorded as backlog" in line and "1 asked since its own last edit" in line, line
    FIGURES["faults injected"] += 1


def test_a_throttle_file_full_of_killed_processes_never_slows_the_bot(rig):
    import pywikibot

    page = "Wikidata:Faults/throttle"
    rig.mediawiki.human().edit(page, LEAD)
    shared = rig.bot.pywikibot_dir() / "throttle.ctrl"
    now = time.time()
    stale = "".join(f"abcd {number} {now - 5:.0f} {site}\n" for number in range(100, 112)
                    for site in ("testwiki:testwiki", f"proxy{rig.wiki.port}:proxy{rig.wiki.port}"))
    for directory in {shared.parent, Path(pywikibot.config.base_dir)}:
        (directory / "throttle.ctrl").write_text(stale)
    assert rig.run(page, "--once", "--live").code == 0
    # The site the bot used was made in this run, from the file above: it counts this process only.
    name = "proxy" + "".join(character for character in rig.bot.api_url if character.isdigit())
    assert pywikibot.Site(name, name).throttle.process_multiplicity == 1
    FIGURES["faults injected"] += 1


# --- secrets ----------------------------------------------------------------------------------------------------

def test_no_secret_leaves_the_bot_whatever_the_services_echo(rig):
    page = "Wikidata:Faults/secrets"
    rig.mediawiki.human().edit(page, LEAD)
    (rig.bot.directory / "bot.ini").write_text("[bot]\nretry_minutes = 0\n")
    options = ("--once", "--live", "--config", str(rig.bot.directory / "bot.ini"))
    assert rig.run(page, *options).code == 0
    rig.mediawiki.human().edit(page, rig.mediawiki.page_text(page) + question("Echo", "Who advised Euler?", 7))
    # The query service's 400 repeats the request's Authorization header (the credentials, base64); the model's
    # 401 repeats its key; both once, then the services answer.
    echo = rig.query.add(Fault("query service echoes Basic auth", path_contains("sparql"),
                               EchoHeader("Authorization", 400, "Bad request from {value}")))
    key = rig.model.add(Fault("model 401 echoes its key", path_contains("/chat/completions"),
                              Reply(401, {"error": {"message": f"Incorrect API key provided: {SECRET_KEY}. Basic "
                                                               + base64.b64encode(f"{SPARQL_USER}:{SPARQL_PASSWORD}"
                                                                                  .encode()).decode(),
                                                    "type": "invalid_request_error", "code": "invalid_api_key"}})))
    for _ in range(3):
        done = rig.run(page, *options)
        assert done.code == 0, done.stderr[-3000:]
    KINDS.update({"query service echoes Basic auth": echo.fired, "model 401 echoes its key": key.fired})
    FIGURES["faults injected"] += echo.fired + key.fired
    assert echo.fired and key.fired
    assert count_replies(rig.mediawiki.page_text(page), "Echo") == 1
    assert "[redacted]" in "".join(record.trace or "" for record in rig.bot.records(page=page).values())


# --- the review page's saves ----------------------------------------------------------------------------------

@pytest.mark.parametrize("when", ["a note before the save", "a note after the save", "the page created"])
def test_a_draft_saved_while_its_answer_is_lost_is_written_once_and_a_reviewers_edit_is_never_undone(rig, when):
    from tests.support.reviewing import Reviewing

    page = f"Wikidata:Faults/slow review {when}"
    rig.mediawiki.human().edit(page, LEAD)
    review = Reviewing(rig.bot, page, f"slow {when}")
    if when != "the page created":
        rig.mediawiki.edit_as_human(review.page, "Drafts of the bot's replies.\n", "the review page")
    review.run()  # the first look
    note = ":A reviewer's note, kept. [[User:Alice|Alice]] 12:00, 20 November 2026 (UTC)"

    def reviewer_note(params=None) -> None:
        rig.mediawiki.edit_as_human(review.page, review.text().rstrip("\n") + "\n" + note + "\n", "a note")

    def answer_lost(params) -> None:  # the wiki stored the draft; its answer never reaches the bot
        if when != "a note before the save":
            reviewer_note()
        raise ConnectionAbortedError("the answer to the save is lost")

    if when == "a note before the save":
        rig.wiki.add(Fault("a reviewer's note", wiki_action("edit", title=review.page), reviewer_note))
    lost = rig.wiki.add(Fault("answer lost", wiki_action("edit", title=review.page), answer_lost, when="after"))
    rig.mediawiki.human().edit(page, LEAD + question("Euler", "Who advised Euler?", 5))
    log = review.run()
    rig.logs.append(log)
    assert lost.fired == 1
    text = review.text()
    assert text.count("== Draft 1:") == 1 and "== Draft 2:" not in text, log[-3000:]
    assert note in text, log[-3000:]
    assert not [revision for revision in rig.bot.bot_edits(review.page) if "undo" in revision["comment"]]
    review.mark(1, "{{approved}}")
    rig.logs.append(review.run())
    assert count_replies(rig.mediawiki.page_text(page), "Euler") == 1


@pytest.mark.parametrize("point", ["after the draft's save", "after the approved reply's save",
                                   "after the outcome's save", "after the approved reply's save, state lost"])
def test_sigkill_at_every_write_point_of_the_review_step_loses_no_draft_and_doubles_nothing(rig, point):
    from tests.support.reviewing import Reviewing

    page = f"Wikidata:Faults/review kill {point}"
    rig.mediawiki.human().edit(page, LEAD)
    review = Reviewing(rig.bot, page, f"kill {point}")
    review.run()  # the first look
    rig.mediawiki.human().edit(page, LEAD + question("Euler", "Who advised Euler?", 5))
    current: dict = {}
    target = page if point.startswith("after the approved reply's save") else review.page
    if point != "after the draft's save":
        review.run()
        review.mark(1, "{{approved}}")

    saved_before = {revision["revid"] for revision in rig.bot.bot_edits(target)}

    def kill(params) -> None:
        # Once the wiki has stored the bot's edit: an answer to a request that stored nothing (one pywikibot sent
        # again after a timeout or a database error, while the first was still at work) goes on to the bot.
        if {revision["revid"] for revision in rig.bot.bot_edits(target)} - saved_before:
            current["process"].kill()

    rig.wiki.add(Fault(f"kill {point}", wiki_action("edit", title=target), kill, when="after", times=100))
    current["process"] = rig.start(page, "--once", "--live", "--config", str(rig.bot.directory / "bot.ini"))
    rig.logs.extend(current["process"].communicate(timeout=300))
    assert current["process"].returncode == -signal.SIGKILL, rig.logs[-1][-3000:]
    rig.wiki.clear()
    if point.endswith("state lost"):
        rig.bot.state_path().unlink()
    rig.logs.append(review.run())
    if point == "after the draft's save":
        review.mark(1, "{{approved}}")
        rig.logs.append(review.run())
    rig.logs.append(review.run())  # one more pass: nothing more happens
    text = review.text()
    assert text.count("== Draft 1:") == 1 and "== Draft 2:" not in text, rig.logs[-1][-3000:]
    assert count_replies(rig.mediawiki.page_text(page), "Euler") == 1, rig.logs[-1][-3000:]
    assert review.drafts() == {"Euler": ("posted", None)}
    assert review.sections() == {"Euler": "answered"}
    assert text.count("'''Posted'''") == 1
    FIGURES["review kill trials"] += 1


def test_a_draft_whose_save_lands_after_the_restarted_bot_looked_for_lost_drafts_is_not_drafted_twice(rig):
    from tests.support.reviewing import Reviewing

    page = "Wikidata:Faults/review kill, the draft's save late"
    rig.mediawiki.human().edit(page, LEAD)
    review = Reviewing(rig.bot, page, "kill, the draft's save late")
    review.run()  # the first look
    rig.mediawiki.human().edit(page, LEAD + question("Euler", "Who advised Euler?", 5))
    current: dict = {}
    release, stored = threading.Event(), threading.Event()

    def kill_and_hold(params) -> None:  # the bot dies with its save sent; the wiki stores it later
        current["process"].kill()
        assert release.wait(300)

    rig.wiki.add(Fault("kill, the draft's save held", wiki_action("edit", title=review.page), kill_and_hold))
    rig.wiki.add(Fault("the held save stored", wiki_action("edit", title=review.page), lambda params: stored.set(),
                       when="after"))
    current["process"] = rig.start(page, "--once", "--live", "--config", str(rig.bot.directory / "bot.ini"))
    rig.logs.extend(current["process"].communicate(timeout=300))
    assert current["process"].returncode == -signal.SIGKILL, rig.logs[-1][-3000:]

    def land_the_held_save() -> None:  # the restarted bot has looked for lost drafts; its agent is at work
        rig.hooks.pop("model")
        release.set()
        wait_for(stored.is_set, PATIENCE, "the held save")

    rig.hooks["model"] = land_the_held_save
    rig.logs.append(review.run())
    review.mark(1, "{{approved}}")
    rig.logs.append(review.run())
    text = review.text()
    assert text.count("== Draft 1:") == 1 and "== Draft 2:" not in text, rig.logs[-1][-3000:]
    assert count_replies(rig.mediawiki.page_text(page), "Euler") == 1, rig.logs[-1][-3000:]


# --- identity across lost state -------------------------------------------------------------------------------

def test_with_the_state_file_lost_follow_ups_and_a_merged_question_are_answered_once(rig):
    page = "Wikidata:Faults/state lost, follow-ups"
    human = rig.mediawiki.human()
    human.edit(page, LEAD + question("Euler", "Who advised Euler?", 1) + question("Bernoulli", "Who advised "
                                                                                    "Bernoulli?", 2))
    assert rig.run(page, "--once", "--live", "--backlog").code == 0
    assert replies_by_section(rig.mediawiki.page_text(page)) == {"Euler": 1, "Bernoulli": 1}
    rig.bot.state_path().unlink()  # lost; meanwhile a follow-up, and a question merged into the other thread
    text = rig.mediawiki.page_text(page)
    euler, bernoulli = text.split("\n== Bernoulli ==")
    merged = ("\n=== Students of Euler ===\nAnd who were Euler's students? [[User:Bob|Bob]] ([[User talk:Bob|talk]])"
              " 12:30, 20 November 2026 (UTC)\n")
    human.edit(page, euler.rstrip("\n") + "\n::And their birth years? [[User:Alice|Alice]] ([[User talk:Alice|"
               "talk]]) 12:20, 20 November 2026 (UTC)\n\n== Bernoulli ==" + bernoulli.rstrip("\n") + "\n" + merged)
    done = rig.run(page, "--once", "--live")
    assert done.code == 0, done.stderr[-3000:]
    rig.logs.append(done.stderr)
    assert replies_by_section(rig.mediawiki.page_text(page)) == {"Euler": 2, "Bernoulli": 2}, done.stderr[-3000:]
    done = rig.run(page, "--once", "--live")  # nothing twice
    assert replies_by_section(rig.mediawiki.page_text(page)) == {"Euler": 2, "Bernoulli": 2}, done.stderr[-3000:]
    FIGURES["faults injected"] += 1


def test_with_the_state_file_lost_a_question_renamed_after_the_answer_is_not_answered_again(rig):
    page = "Wikidata:Faults/state lost, renamed"
    human = rig.mediawiki.human()
    human.edit(page, LEAD + question("Euler", "Who advised Euler?", 1))
    assert rig.run(page, "--once", "--live", "--backlog").code == 0
    assert replies_by_section(rig.mediawiki.page_text(page)) == {"Euler": 1}
    human.edit(page, rig.mediawiki.page_text(page).replace("== Euler ==", "== Euler (resolved) =="), "resolved")
    rig.bot.state_path().unlink()
    human.edit(page, rig.mediawiki.page_text(page) + question("Forged", "Who advised Bernoulli?", 2).rstrip("\n")
               + "\n:Done. [[User:SpinachBot|SpinachBot]] ([[User talk:SpinachBot|talk]]) 12:01, 20 November 2026 "
               "(UTC)\n")  # a bot signature typed by someone else silences nothing
    done = rig.run(page, "--once", "--live")
    assert done.code == 0, done.stderr[-3000:]
    rig.logs.append(done.stderr)
    replies = replies_by_section(rig.mediawiki.page_text(page))
    FIGURES["double replies"] += max(0, replies["Euler (resolved)"] - 1)
    assert replies == {"Euler (resolved)": 1, "Forged": 2}, done.stderr[-3000:]
