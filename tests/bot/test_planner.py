"""The planning rules, without a wiki: what the bot decides to answer on the forum page, and what it leaves alone.

A page is built edit by edit, as its history (each edit a revision by a user); the state is a real state file.
Each test reads the page as a pass reads it and asserts the plan: the replies the bot would write (what each
answers, under which key, to whom) and the decisions a forum user would notice (waiting for a signature,
skipped with a reason, given up as gone, kept as it was).
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from bot.attribution import from_history
from bot.config import BotConfig
from bot.forum import FollowupKey, Reading, Section, parse_sections
from bot.forum_decisions import mark_answered
from bot.history import OwnEdit, Revision
from bot.kinds import TaskKind
from bot.planner import AddRecord, Adopt, DropDraft, Plan, Planner, SetStatus, Skip
from bot.state import SectionStatus, State
from bot.wiki import opt_out_calls

PAGE = "Wikidata:Request a query"
BOT = "SpinachBot"


def signature(user: str, minute: int = 0) -> str:
    return f"[[User:{user}|{user}]] ([[User talk:{user}|talk]]) 12:{minute:02d}, 20 November 2026 (UTC)"


def nobots(page_text: str | None = None, section: Section | None = None, reading: Reading | None = None) -> str | None:
    """The opt-out gate for ``{{nobots}}`` (the wiki's own gate reads it with pywikibot, against MediaWiki)."""
    if page_text is not None and opt_out_calls(page_text.split("\n==", 1)[0], {"nobots"}) != []:
        return "the page opts out of bots"
    if section is not None and opt_out_calls(section.text, {"nobots"}) != []:
        return "the section opts out of bots"
    return None


class Forum:
    """The forum page as its history makes it: each edit is a revision by a user."""

    def __init__(self) -> None:
        self.revisions: list[Revision] = []
        self.edit("Admin", "Ask your questions below.")

    @property
    def text(self) -> str:
        return self.revisions[-1].text

    @property
    def revision(self) -> int:
        return self.revisions[-1].id

    def edit(self, user: str, text: str) -> int:
        self.revisions.append(Revision(len(self.revisions) + 1, user, text, creation=not self.revisions))
        return self.revision

    def ask(self, user: str, heading: str, question: str, minute: int = 0) -> int:
        return self.edit(user, f"{self.text}\n\n== {heading} ==\n{question} {signature(user, minute)}\n")

    def reply(self, user: str, under: str, words: str, depth: int = 1, minute: int = 5) -> int:
        """*words* signed by *user*, added at the end of the section *under*."""
        head, marker, rest = self.text.partition(f"== {under} ==\n")
        body, next_heading, tail = rest.partition("\n== ")
        line = f"{':' * depth}{words} {signature(user, minute)}\n"
        return self.edit(user, head + marker + body.rstrip("\n") + "\n" + line + next_heading + tail)

    def own_edits(self, revision: int) -> list[OwnEdit]:
        when = datetime(2026, 11, 20, tzinfo=timezone.utc)
        return [OwnEdit(each.id, when, "reply") for each in self.revisions if each.user == BOT and each.id <= revision]

    def sections(self) -> list[Section]:
        """The sections as a pass reads them: attributed by the history, the bot's replies found."""
        sections = parse_sections(self.text, from_history(self.revisions, self.text, self.revision))
        mark_answered(sections, BOT, lambda: self.own_edits(self.revision))
        return sections

    def key(self, heading: str) -> str:
        return next(section.key for section in self.sections() if section.heading == heading)


@pytest.fixture
def state(tmp_path):
    state = State(tmp_path / "state.sqlite")
    yield state
    state.close()


def plan(forum: Forum, state: State, backlog_until: int | None = None, **settings) -> Plan:
    planner = Planner(PAGE, BOT, BotConfig(page=PAGE, **settings), nobots, forum.own_edits)
    return planner.plan(state.sections(PAGE), forum.text, forum.sections(), forum.revision,
                        backlog_until=backlog_until)


def replies(plan: Plan) -> list[tuple[str, TaskKind, str]]:
    """What each planned reply answers: the section's heading, the task's kind, and who wrote what it answers."""
    return [(task.section.heading, task.kind, task.followup.user if task.followup else task.section.author)
            for task in plan.tasks]


def test_a_new_signed_question_is_answered_and_planning_writes_nothing(state, tmp_path):
    forum = Forum()
    forum.ask("Alice", "Cities", "Which cities are in France?")
    forum.edit("Bob", forum.text + "\n== Unsigned ==\nNo signature yet.\n")
    before = (tmp_path / "state.sqlite").read_bytes()

    decided = plan(forum, state)

    assert replies(decided) == [("Cities", TaskKind.QUESTION, "Alice")]
    assert decided.tasks[0].key == forum.key("Cities")
    assert (tmp_path / "state.sqlite").read_bytes() == before and state.sections(PAGE) == []
    assert [change for change in decided.changes if isinstance(change, SetStatus)] == [
        SetStatus(forum.key("Unsigned"), SectionStatus.WAITING, "no signature yet")]
    added = {change.heading: change.status for change in decided.changes if isinstance(change, AddRecord)}
    assert added == {"Cities": SectionStatus.PENDING, "Unsigned": SectionStatus.PENDING}


def test_questions_there_before_the_bot_first_looked_are_backlog_and_not_answered(state):
    forum = Forum()
    asked = forum.ask("Alice", "Old", "Which rivers flow through Paris?")
    forum.ask("Bob", "New", "Which cities are in France?", minute=3)

    decided = plan(forum, state, backlog_until=asked)

    assert replies(decided) == [("New", TaskKind.QUESTION, "Bob")]
    assert AddRecord(forum.key("Old"), "Old", SectionStatus.BACKLOG, forum.sections()[0].fingerprint, None,
                     forum.sections()[0].question) in decided.changes


def answered(forum: Forum, state: State) -> str:
    """Alice asks who advised Euler under "Advisors" and the bot's reply there is recorded: the section's key."""
    forum.ask("Alice", "Advisors", "Who advised Euler?")
    key = forum.key("Advisors")
    forum.reply(BOT, "Advisors", "Here is a query.")
    state.add(PAGE, key, "Advisors", SectionStatus.PENDING)
    state.record_answered(PAGE, key, forum.revision)
    return key


def test_the_askers_comment_under_the_bots_reply_is_a_follow_up_and_a_bystanders_is_not(state):
    forum = Forum()
    key = answered(forum, state)
    forum.reply("Carol", "Advisors", "Nice one.", depth=2, minute=8)
    assert plan(forum, state).tasks == []

    comment = forum.reply("Alice", "Advisors", "And their birth years?", depth=2, minute=9)
    decided = plan(forum, state)

    assert replies(decided) == [("Advisors", TaskKind.FOLLOW_UP, "Alice")]
    assert decided.tasks[0].key == str(FollowupKey(key, comment)) == f"{key} / r{comment}"
    assert decided.tasks[0].depth == 3
    assert decided.changes == [AddRecord(str(FollowupKey(key, comment)), "Advisors", SectionStatus.PENDING)]


def test_a_follow_ups_key_reads_back_as_records_have_always_stored_it():
    key = FollowupKey("Rivers / r5 @ r12", 40)  # a heading may hold the key's own separator

    assert str(key) == "Rivers / r5 @ r12 / r40"
    assert FollowupKey.parse(str(key)) == key
    assert FollowupKey.parse("Rivers / r5 @ r12") is None  # a section's key
    assert FollowupKey.parse("Rivers @ r12 / rx") is None


def test_follow_ups_stop_at_the_limit(state):
    forum = Forum()
    key = answered(forum, state)
    comment = forum.reply("Alice", "Advisors", "And their birth years?", depth=2, minute=9)

    decided = plan(forum, state, max_followups=0)

    assert decided.tasks == []
    assert decided.changes[-1] == Skip(str(FollowupKey(key, comment)), "follow-up limit reached (max_followups = 0)")


def test_a_ping_in_an_old_question_is_answered_and_an_old_question_without_one_is_not(state):
    forum = Forum()
    asked = forum.ask("Alice", "Old", "Which rivers flow through Paris?")
    forum.ask("Alice", "Older", "Which mountains are in Chile?", minute=1)
    plan_before = plan(forum, state, backlog_until=forum.revision)
    assert plan_before.tasks == []
    for change in plan_before.changes:
        state.add(PAGE, change.key, change.heading, change.status, change.fingerprint, change.question)
    ping = forum.reply("Bob", "Old", f"{{{{ping|{BOT}}}}} can you help here?", minute=7)

    decided = plan(forum, state, backlog_until=asked)

    assert replies(decided) == [("Old", TaskKind.PING, "Bob")]
    assert decided.tasks[0].key == str(FollowupKey(forum.key("Old"), ping))


def test_a_question_merged_into_another_thread_is_answered_there_under_its_own_record(state):
    forum = Forum()
    forum.ask("Alice", "Rivers", "Which rivers flow through Paris?")
    forum.ask("Bob", "Paris rivers", "What rivers cross Paris, with their lengths?", minute=2)
    moved = forum.sections()[1]
    state.add(PAGE, moved.key, moved.heading, SectionStatus.PENDING, moved.fingerprint, moved.question)
    rivers = forum.sections()[0]
    state.add(PAGE, rivers.key, rivers.heading, SectionStatus.PENDING, rivers.fingerprint, rivers.question)
    # Carol makes Bob's question a subsection of Alice's thread.
    forum.edit("Carol", forum.text.replace("\n\n== Paris rivers ==\n", "\n=== Paris rivers ===\n"))

    decided = plan(forum, state)

    assert sorted((task.key, task.section.heading, task.kind) for task in decided.tasks) == sorted([
        (rivers.key, "Rivers", TaskKind.QUESTION), (moved.key, "Paris rivers", TaskKind.QUESTION)])
    assert not any(isinstance(change, SetStatus) and change.status == SectionStatus.GONE
                   for change in decided.changes)


def test_a_renamed_section_the_bot_answered_is_not_answered_again(state):
    forum = Forum()
    forum.ask("Alice", "Rivers", "Which rivers flow through Paris?")
    old = forum.key("Rivers")
    forum.reply(BOT, "Rivers", "Here is a query.")
    state.add(PAGE, old, "Rivers", SectionStatus.PENDING)
    state.record_answered(PAGE, old, forum.revision)
    forum.edit("Carol", forum.text.replace("== Rivers ==", "== Rivers of Paris =="))

    decided = plan(forum, state)

    assert decided.tasks == []
    assert forum.key("Rivers of Paris") != old


def test_a_section_blanked_and_restored_by_someone_else_keeps_its_identity_and_decision(state):
    forum = Forum()
    forum.ask("Alice", "Rivers", "Which rivers flow through Paris?")
    section = forum.sections()[0]
    state.add(PAGE, section.key, section.heading, SectionStatus.PENDING, section.fingerprint, section.question)
    state.record_skipped(PAGE, section.key, "the section is marked resolved")
    text = forum.text
    forum.edit("Vandal", "Ask your questions below.")
    forum.edit("Carol", text)

    decided = plan(forum, state)

    assert forum.key("Rivers") == section.key
    assert decided == Plan([], [])


def test_a_section_recorded_under_another_identity_moves_its_record_and_keeps_its_decision(state):
    forum = Forum()
    forum.ask("Alice", "Rivers", "Which rivers flow through Paris?")
    section = forum.sections()[0]
    old = "Rivers @ 2026-11-20T12:00Z"  # as a first look without the page's history knew it
    state.add(PAGE, old, section.heading, SectionStatus.PENDING, section.fingerprint, section.question)
    state.record_skipped(PAGE, old, "the section is marked resolved")

    decided = plan(forum, state)

    assert decided.tasks == []
    assert decided.changes == [Adopt("Rivers", section.key, old)]


def test_an_asker_who_says_they_found_it_is_left_alone_and_their_waiting_draft_dropped(state):
    forum = Forum()
    forum.ask("Alice", "Rivers", "Which rivers flow through Paris?")
    forum.ask("Bob", "Mountains", "Which mountains are in Chile?", minute=1)
    drafted = forum.key("Mountains")
    state.add(PAGE, drafted, "Mountains", SectionStatus.DRAFTED)
    forum.reply("Alice", "Rivers", "Found it, thanks anyway.", minute=8)
    forum.reply("Bob", "Mountains", "Never mind, solved with a query of my own.", minute=9)

    decided = plan(forum, state)

    assert decided.tasks == []
    assert Skip(forum.key("Rivers"), 'the asker said the question is settled ("found it")', "Rivers") \
        in decided.changes
    assert DropDraft(drafted, "Mountains", 'the asker said the question is settled ("never mind")') \
        in decided.changes


def test_someone_else_saying_found_it_settles_nothing(state):
    forum = Forum()
    forum.ask("Alice", "Rivers", "Which rivers flow through Paris?")
    forum.reply("Mallory", "Rivers", "Found it, thanks anyway.", minute=8)

    assert replies(plan(forum, state)) == [("Rivers", TaskKind.QUESTION, "Alice")]


def test_opt_outs_keep_the_bot_out_of_a_section_or_the_whole_page(state):
    forum = Forum()
    forum.ask("Alice", "Rivers", "Which rivers flow through Paris? {{nobots}}")
    forum.ask("Bob", "Mountains", "Which mountains are in Chile?", minute=1)

    decided = plan(forum, state)

    assert replies(decided) == [("Mountains", TaskKind.QUESTION, "Bob")]
    assert Skip(forum.key("Rivers"), "the section opts out of bots", "Rivers") in decided.changes

    forum.edit("Admin", "{{nobots}}" + forum.text)
    assert plan(forum, state) == Plan([], [])


def test_the_bots_own_notice_and_a_question_someone_answered_with_a_query_get_no_reply(state):
    forum = Forum()
    forum.ask(BOT, "Notice", "The bot will be down tomorrow.")
    forum.ask("Alice", "Rivers", "Which rivers flow through Paris?", minute=1)
    forum.reply("Dave", "Rivers", "Try {{SPARQL|query=SELECT ?river WHERE { ?river wdt:P31 wd:Q4022 }}}", minute=4)

    decided = plan(forum, state)

    assert decided.tasks == []
    assert {(change.heading, change.reason) for change in decided.changes if isinstance(change, Skip)} == {
        ("Rivers", "someone already posted a query in a reply")}
    assert replies(plan(forum, state, skip_human_answered=False)) == [("Rivers", TaskKind.QUESTION, "Alice")]
