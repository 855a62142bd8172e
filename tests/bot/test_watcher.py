"""The watcher on a real MediaWiki, run as an operator runs it (``python -m bot.run``, in this process; as a
process of its own where it is killed).

What a forum user notices: the heading reaches the model, a follow-up is answered once in the thread (a
killed bot does not answer it twice), a ping in an old section is answered, a section a human already
answered with a query is left alone, one bad section never keeps the others waiting, a decoy cannot take
a reply, and nothing waits for the page to change to be retried.
"""

import shutil
import signal
import subprocess
import threading
import time

import pytest

from tests.support.euler import EULER_ADVISORS_QUERY
from tests.support.bot_rig import BotRig, run_bot, scripted, user_messages
from tests.support.forum_text import new_section, section_text, signature
from tests.support.llm_server import ErrorReply, SlowReply, ToolCallReply
from tests.support.mediawiki import BOT_USER

pytestmark = pytest.mark.mediawiki
YEAR_QUERY = "SELECT ?advisor ?year WHERE { wd:Q7604 wdt:P184 ?advisor . }"


def records(rig: BotRig) -> dict[str, tuple]:
    return {key: (record.status, record.attempts, record.last_error) for key, record in rig.records().items()}


def indentation(reply: str) -> int:
    """How deep a reply is indented: the leading colons of its first line."""
    first = reply.strip().split("\n", 1)[0]
    return len(first) - len(first.lstrip(":"))


def test_the_heading_reaches_the_model_and_the_summary_keeps_the_slash(mediawiki, forum, rig):
    run_bot(rig, forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section(
        "Doctoral advisors of Euler, 1726/27", "As in the title, please."))
    run_bot(rig, forum, "--once", "--live")
    [edit] = rig.bot_edits(forum)
    assert edit["comment"].startswith("/* Doctoral advisors of Euler, 1726/27 */ ")
    asked = user_messages(rig.llm.requests[0])
    assert "Doctoral advisors of Euler, 1726/27" in asked and "As in the title, please." in asked
    assert "Alice (" not in asked and "12:00" not in asked


def test_a_question_wikidata_cannot_answer_gets_a_reply_in_words_and_an_honest_summary(
        mediawiki, forum, rig, llm_server):
    def model(body):
        if not any(message["role"] == "tool" for message in body["messages"]):
            return ToolCallReply("search_wikidata", {"thought": "Look for it.", "query": "Euler favourite food"})
        return ToolCallReply("stop", {"explanation": "Wikidata has no property for a favourite food.",
                                      "language": "en", "cannot_answer": True})

    run_bot(rig, forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler's food", "What did Euler eat?"))
    run_bot(rig, forum, "--once", "--live", llm=llm_server(model))
    [edit] = rig.bot_edits(forum)
    assert edit["comment"] == "/* Euler's food */ automated reply: this cannot be answered from Wikidata"
    reply = section_text(mediawiki.page_text(forum), "Euler's food").split("What did Euler eat?", 1)[1]
    assert "This cannot be answered from Wikidata" in reply and "no property for a favourite food" in reply
    assert "Euler favourite food" in reply and "{{SPARQL" not in reply and "please check" not in reply


def test_a_follow_up_is_answered_once_in_the_thread_even_when_the_bot_is_killed(
        mediawiki, forum, rig, llm_server):
    run_bot(rig, forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    run_bot(rig, forum, "--once", "--live")
    assert len(rig.bot_edits(forum)) == 1
    follow_up = "::Thanks! Can you also add the year of the doctorate? " + signature(minute=30) + "\n"
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum).rstrip("\n") + "\n" + follow_up, "follow-up")

    # The bot is killed while the model works on the follow-up: nothing is saved, nothing is lost.
    asked = threading.Event()
    stuck = scripted({})

    def hang(body):
        asked.set()
        return SlowReply(120, stuck(body))

    killed = rig.start(forum, "--once", "--live", llm=llm_server(hang), output=subprocess.DEVNULL)
    assert asked.wait(120)
    killed.send_signal(signal.SIGKILL)
    killed.wait(30)
    assert len(rig.bot_edits(forum)) == 1

    # Nothing changed on the page, yet the next run answers the follow-up, in the thread, with the context.
    answers = llm_server(scripted({"year of the doctorate": YEAR_QUERY}))
    shutil.copy(rig.state_path(), rig.state_path("before.sqlite"))
    run_bot(rig, forum, "--once", "--live", llm=answers)
    assert len(rig.bot_edits(forum)) == 2
    asked_then = user_messages(answers.requests[0])
    assert "Can you also add the year of the doctorate?" in asked_then
    assert EULER_ADVISORS_QUERY in asked_then and "Who advised Euler?" in asked_then
    assert "Your earlier answer in this thread used this query" in asked_then  # its own draft, not the asker's
    thread = section_text(mediawiki.page_text(forum), "Euler")
    reply = thread.split(follow_up.strip(), 1)[1]
    first_reply = thread.split("Who advised Euler?", 1)[1].split("\n", 1)[1].split(follow_up.strip(), 1)[0]
    assert "?advisor ?year WHERE" in reply  # the revised query, in the thread
    assert "follow-up: a revised SPARQL query" in rig.bot_edits(forum)[0]["comment"]
    assert indentation(reply) > indentation(first_reply) > 0
    assert thread.count("[[User:SpinachBot|SpinachBot]]") == 2

    # A lost state write after the save, then more runs: still one answer to the follow-up.
    shutil.copy(rig.state_path("before.sqlite"), rig.state_path())
    run_bot(rig, forum, "--once", "--live", llm=answers)
    assert len(rig.bot_edits(forum)) == 2

    # A second follow-up is past max_followups (1 here), counted from the page as well as the state.
    (rig.directory / "bot.ini").write_text("[bot]\nmax_followups = 1\n")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + "\n::::And the thesis title? "
                            + signature(minute=40), "second follow-up")
    run_bot(rig, forum, "--once", "--live", "--config", str(rig.directory / "bot.ini"), llm=answers)
    assert len(rig.bot_edits(forum)) == 2
    assert any(status == "skipped" and "max_followups = 1" in error
               for key, (status, _, error) in records(rig).items() if " / r" in key)


def test_a_ping_in_a_backlog_section_is_answered_and_a_human_answered_section_is_not(
        mediawiki, forum, rig):
    run_bot(rig, forum, "--once", "--live")  # the fixture's sections are backlog
    page = mediawiki.page_text(forum)
    marek = "[[User:Marek_K|Marek K]] ([[User talk:Marek_K|talk]]) 16:45, 5 March 2024 (UTC)"
    assert marek in page
    page = page.replace(marek, marek + "\n:{{ping|SpinachBot}} could you have a look? " + signature(minute=10), 1)
    page += new_section("Advisors", "Who advised Euler?", minute=20)
    page += ":Try {{SPARQL|query=" + EULER_ADVISORS_QUERY + "}} " + signature("Bob", 25) + "\n"
    mediawiki.edit_as_human(forum, page, "a ping and a question a human answered")
    done = run_bot(rig, forum, "--once", "--live")
    [edit] = rig.bot_edits(forum)
    text = mediawiki.page_text(forum)
    answer = section_text(text, "Query times out").split("could you have a look?", 1)[1]
    assert "SpinachBot" in answer and "::{{re|1=Alice}} " in answer  # the one who pinged is addressed
    # the bot's first answer in that thread: summarised as the answer to a ping, not as a revision of an earlier one
    assert edit["comment"] == ("/* Query times out */ answer to a ping: a SPARQL query written by an automated "
                               "agent (please check it)"), edit["comment"]
    assert "answering 'Query times out' (ping)" in done.stderr
    assert "[[User:SpinachBot" not in section_text(text, "Advisors")
    assert any(status == "skipped" and "query" in (error or "")
               for key, (status, _, error) in records(rig).items() if key.startswith("Advisors @")), done.stderr


def test_one_bad_section_never_keeps_the_others_waiting(mediawiki, forum, rig, llm_server):
    run_bot(rig, forum, "--once", "--live")
    (rig.directory / "bot.ini").write_text("[bot]\nreply_max_chars = 4000\nmax_sections_per_pass = 5\n")
    huge = "SELECT ?advisor WHERE { wd:Q7604 wdt:P184 ?advisor . " + "FILTER(?advisor != wd:Q1) " * 250 + "}"
    page = mediawiki.page_text(forum)
    page += "\n\n== Bad date ==\nWhat? [[User:Eve|Eve]] 25:61, 31 February 2026 (UTC)\n"
    page += new_section("Huge", "A question whose answer is huge.", minute=1)
    page += new_section("Broken text", "A question the model answers with broken text.", minute=2)
    page += new_section("Broken thought", "A question the model thinks about in broken text.", minute=2)
    page += new_section("Too long", "x " * 10001, minute=3)
    page += new_section("Euler", "Who advised Euler?", minute=4)
    mediawiki.edit_as_human(forum, page, "six new sections")
    models = {"broken text": llm_server(scripted({}, final="That \ud800 answers it.")),
              "broken thought": llm_server(scripted({}, first="Ask \ud800 the query service."))}
    ordinary = llm_server(scripted({"huge": huge}))

    def mixed(body):
        asked = user_messages(body)
        return next((model for phrase, model in models.items() if phrase in asked), ordinary).next_reply(body)

    done = run_bot(rig, forum, "--once", "--live", "--config", str(rig.directory / "bot.ini"),
                   llm=llm_server(mixed))
    text = mediawiki.page_text(forum)
    assert "[[User:SpinachBot" in section_text(text, "Euler"), done.stderr[-3000:]
    note = section_text(text, "Too long")
    assert "longer than 20,000 characters" in note and "[[User:SpinachBot" in note
    state = records(rig)
    for heading in ("Huge", "Broken text", "Broken thought"):
        [(status, attempts, error)] = [value for key, value in state.items() if key.startswith(heading + " @")]
        answered = "[[User:SpinachBot" in section_text(text, heading)
        assert answered == (status == "answered"), (heading, status, error)
        assert answered or (status == "pending" and attempts == 1 and error), (heading, status, error)


def test_a_decoy_above_with_the_same_heading_and_minute_does_not_take_the_reply(mediawiki, forum, rig):
    run_bot(rig, forum, "--once", "--live")
    question = new_section("Euler", "Who advised Euler?", minute=5)
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + question, "a question")
    decoy = "== Euler ==\nNo, answer here instead. " + signature(minute=5) + "\n\n"
    text = mediawiki.page_text(forum)
    mediawiki.edit_as_human(forum, text.replace("== Euler ==", decoy + "== Euler ==", 1), "a decoy above")
    run_bot(rig, forum, "--once", "--live")
    text = mediawiki.page_text(forum)
    original = text.split("Who advised Euler?", 1)[1].split("\n== ", 1)[0]
    assert original.count("[[User:SpinachBot|SpinachBot]]") == 1
    assert len(rig.bot_edits(forum)) == 2  # the decoy is a question of its own, answered in its place
    assert text.split("No, answer here instead.", 1)[1].split("Who advised Euler?")[0].count("[[User:SpinachBot") == 1


def test_a_dry_run_or_a_stop_leaves_the_section_pending_for_the_next_live_pass(mediawiki, forum, rig):
    run_bot(rig, forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    preview = run_bot(rig, forum, "--once", "--dry-run")
    assert "dry run: nothing was saved" in preview.stdout
    mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "stop", "stop the bot")
    run_bot(rig, forum, "--once", "--live")
    mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "", "clear the stop page")
    assert rig.bot_edits(forum) == []
    run_bot(rig, forum, "--once", "--live")  # the page has not changed since the preview
    assert len(rig.bot_edits(forum)) == 1
    run_bot(rig, forum, "--once", "--live")
    assert len(rig.bot_edits(forum)) == 1


def test_a_section_blanked_then_restored_is_answered(mediawiki, forum, rig, llm_server):
    run_bot(rig, forum, "--once", "--live")
    with_question = mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?")
    mediawiki.edit_as_human(forum, with_question, "a question")
    blanked = []

    def blank_then_answer(body):  # the section disappears while the model works
        if not blanked:
            blanked.append(True)
            mediawiki.edit_as_human(forum, with_question.split("\n\n== Euler ==")[0] + "\n", "blanked")
        return rig.llm.next_reply(body)

    run_bot(rig, forum, "--once", "--live", llm=llm_server(blank_then_answer))
    assert rig.bot_edits(forum) == []
    mediawiki.edit_as_human(forum, with_question, "restored")
    run_bot(rig, forum, "--once", "--live")
    assert len(rig.bot_edits(forum)) == 1
    assert "[[User:SpinachBot" in section_text(mediawiki.page_text(forum), "Euler")


def test_the_queue_moves_on_when_a_pass_makes_no_edit(mediawiki, forum, rig, llm_server):
    run_bot(rig, forum, "--once", "--live")
    page = mediawiki.page_text(forum)
    for number in range(2):
        page += new_section(f"Question {number}", "Who advised Euler?", minute=number)
    mediawiki.edit_as_human(forum, page, "two questions")
    (rig.directory / "bot.ini").write_text("[bot]\nmax_sections_per_pass = 1\n")
    broken = llm_server(lambda body: ErrorReply(400, "the model is not available"))
    run_bot(rig, forum, "--once", "--live", "--config", str(rig.directory / "bot.ini"), llm=broken)
    assert rig.bot_edits(forum) == []
    # Nobody edits the page: the next pass still takes the next section (the failed one waits for its backoff).
    run_bot(rig, forum, "--once", "--live", "--config", str(rig.directory / "bot.ini"))
    assert len(rig.bot_edits(forum)) == 1
    assert "[[User:SpinachBot" in section_text(mediawiki.page_text(forum), "Question 1")
    assert [value[:2] for key, value in records(rig).items() if key.startswith("Question 0 @")] == [("pending", 1)]


def test_a_passing_fault_never_gives_a_section_up_but_a_failing_section_is(tmp_path):
    from bot.state import MAX_RETRY_SECONDS, State

    state = State(tmp_path / "unit.sqlite")
    for key in ("down", "broken"):
        state.add("Forum", key, key, "pending")
    for _ in range(10):
        state.record_failure("Forum", "down", "ServerError: 503", 1800, 3, transient=True)
        state.record_failure("Forum", "broken", "ValueError: cannot render", 1800, 3)
    down, broken = state.section("Forum", "down"), state.section("Forum", "broken")
    assert (down.status, down.attempts) == ("pending", 10)
    assert down.next_attempt - time.time() <= MAX_RETRY_SECONDS
    assert broken.status == "failed"
    state.close()


def test_a_state_file_from_before_replies_kept_what_they_read_keeps_its_answers_and_records_it_from_now(tmp_path):
    import sqlite3

    from bot.state import State

    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)
    old.executescript("CREATE TABLE sections (page TEXT NOT NULL, key TEXT NOT NULL, heading TEXT NOT NULL, "
                      "status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT, next_attempt REAL "
                      "NOT NULL DEFAULT 0, answered_revision INTEGER, trace TEXT, updated REAL NOT NULL, "
                      "PRIMARY KEY (page, key));"
                      "INSERT INTO sections (page, key, heading, status, answered_revision, updated) "
                      "VALUES ('Forum', 'Euler @ r2', 'Euler', 'answered', 4, 0);")
    old.close()
    state = State(path)
    kept = state.section("Forum", "Euler @ r2")
    assert (kept.status, kept.answered_revision, kept.read_revision) == ("answered", 4, None)  # not known: old rule
    state.add("Forum", "Euler @ r2 / r5", "Euler", "pending")
    state.record_answered("Forum", "Euler @ r2 / r5", 7, 5)
    assert (state.section("Forum", "Euler @ r2 / r5").answered_revision,
            state.section("Forum", "Euler @ r2 / r5").read_revision) == (7, 5)
    state.close()


def test_a_german_question_is_answered_in_words_in_german(mediawiki, forum, rig, llm_server):
    explanation = "Die Abfrage liefert Eulers Doktorväter über die Eigenschaft P184 (Doktorvater)."

    def german(body):
        if not any(message["role"] == "tool" for message in body["messages"]):
            return ToolCallReply("execute_sparql", {"thought": "Doktorväter abfragen.", "sparql": EULER_ADVISORS_QUERY})
        return ToolCallReply("stop", {"thought": "Das beantwortet die Frage.", "language": "de",
                                      "explanation": explanation})

    run_bot(rig, forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section(
        "Doktorväter von Euler", "Wer waren die Doktorväter von Leonhard Euler?"))
    run_bot(rig, forum, "--once", "--live", llm=llm_server(german))

    reply = section_text(mediawiki.page_text(forum), "Doktorväter von Euler").split("Euler?", 1)[1]
    assert "Die Abfrage unten liefert 1 Ergebnis." in reply and "[[User:SpinachBot|SpinachBot]]" in reply
    page = mediawiki.rendered_html(forum)
    assert explanation in page  # the model's words, shown as text on the rendered page
    assert "The query below" not in page and "Steps taken" not in page  # no English wording beside it


def test_a_follow_up_indented_two_thousand_levels_is_answered_at_the_deepest_indentation(mediawiki, forum, rig):
    from bot.forum_decisions import MAX_DEPTH

    run_bot(rig, forum, "--once", "--live")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    run_bot(rig, forum, "--once", "--live")
    deep = ":" * 2000 + "And the years of the doctorates? " + signature(minute=30)
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum).rstrip("\n") + "\n" + deep + "\n", "a deep follow-up")
    run_bot(rig, forum, "--once", "--live")
    assert len(rig.bot_edits(forum)) == 2
    reply = section_text(mediawiki.page_text(forum), "Euler").split(deep, 1)[1]
    assert indentation(reply) == MAX_DEPTH


def test_replies_the_wiki_refused_never_keep_a_new_question_waiting(mediawiki, forum, rig):
    run_bot(rig, forum, "--once", "--live")
    hidden = "".join(f'\n<div style="display:none">\n== Hidden {number} ==\nAnswer me instead. '
                     f'{signature("Mallory", number)}\n</div>\n' for number in range(3))
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + hidden, "three questions nobody sees")
    (rig.directory / "bot.ini").write_text("[bot]\nmax_sections_per_pass = 2\n")
    options = ("--once", "--live", "--config", str(rig.directory / "bot.ini"))
    run_bot(rig, forum, *options)
    assert rig.bot_edits(forum) == []
    assert sorted(status for status, _, _ in records(rig).values() if status == "refused") == ["refused"] * 2
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    run_bot(rig, forum, *options)
    assert len(rig.bot_edits(forum)) == 1
    assert "[[User:SpinachBot" in section_text(mediawiki.page_text(forum), "Euler")
    assert all(status != "failed" for status, _, _ in records(rig).values())


def test_planning_writes_nothing_and_applying_writes_what_was_decided(mediawiki, forum, tmp_path):
    import pywikibot

    from bot.config import BotConfig
    from bot.forum import parse_sections
    from bot.state import State
    from bot.watcher import Watcher
    from bot.wiki import ForumPage

    mediawiki.edit_as_human(forum, "Ask here." + new_section("Cities", "Which cities are in France?")
                            + "\n== Unsigned ==\nNo signature yet.\n"
                            + new_section("Solved", "{{Resolved}} How do I count humans?", minute=1), "questions")
    path = tmp_path / "planner.sqlite"
    state = State(path)
    state.add(forum, "Archived @ 1", "Archived", "pending")
    watcher = Watcher(ForumPage(pywikibot.Site(), forum, "User:Nobody/Stop"), state, answer=None,
                      config=BotConfig(page=forum))
    text, revision = watcher.forum.read()
    reading = watcher.forum.reading(text, revision)
    sections = parse_sections(text, watcher.attribute(text, revision, True), reading)
    unchanged = path.read_bytes()
    plan = watcher.plan(text, sections, revision, reading)
    assert path.read_bytes() == unchanged
    assert {record.key for record in state.sections(forum)} == {"Archived @ 1"}
    assert [task.section.heading for task in plan.tasks] == ["Cities"]

    watcher.apply(plan.changes)
    assert path.read_bytes() != unchanged
    assert {record.heading: (record.status, record.last_error) for record in state.sections(forum)} == {
        "Cities": ("pending", None), "Unsigned": ("waiting", "no signature yet"),
        "Solved": ("skipped", "the section is marked resolved"), "Archived": ("gone", "not on the page")}
    assert watcher.counter == {"skipped": 1}
    state.close()
