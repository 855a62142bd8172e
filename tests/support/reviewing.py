"""The bot's review step as a reviewer meets it on the test wiki: the bot configured to draft, its review page,
the drafts as the page and the bot's state hold them, and questions asked on the forum for it to draft."""

from __future__ import annotations

import re
import sqlite3

from tests.support.bot_rig import BotRig
from tests.support.forum_text import new_section, signature
from tests.support.mediawiki import BOT_USER, unique


def draft_heading_line(text: str, number: int) -> str:
    """The heading line of draft *number*'s section in the review page's *text*: the bot's (``== Draft 1: …``), or
    one a reviewer renamed (``== Draft 1 (checked) ==``)."""
    return next(line for line in text.split("\n") if re.match(rf"==\s*Draft {number}\b[^\n]*==\s*$", line))


class Reviewing:
    """The bot with ``review = true`` on one forum page, its review page of its own, and the drafts' state."""

    def __init__(self, rig: BotRig, forum: str, name: str, reviewers: str = "Alice") -> None:
        self.rig, self.forum = rig, forum
        self.page = f"User:{BOT_USER}/Review/{unique(name)}"
        self.configure(reviewers)

    def configure(self, reviewers: str) -> None:
        (self.rig.directory / "bot.ini").write_text(
            f"[bot]\nreview = true\nreview_page = {self.page}\nreviewers = {reviewers}\noperator = Alice\n"
            "max_sections_per_pass = 5\n")

    def run(self) -> str:
        done = self.rig.run(self.forum, "--once", "--live", "--config", str(self.rig.directory / "bot.ini"))
        assert done.code == 0, done.stderr[-3000:]
        return done.stderr

    def text(self) -> str:
        return self.rig.mediawiki.page_text(self.page)

    def heading(self, number: int) -> str:
        """Draft *number*'s heading line as it stands (``== Draft 1: Euler (waiting) ==``, or as renamed)."""
        return draft_heading_line(self.text(), number)

    def draft(self, number: int) -> str:
        return self.text().split(self.heading(number) + "\n", 1)[1].split("\n== ", 1)[0]

    def edit_draft(self, number: int, change, summary: str = "review") -> None:
        """Alice edits the section of draft *number* with *change* (a function of its text)."""
        text = self.text()
        heading = draft_heading_line(text, number)
        head, rest = text.split(heading + "\n", 1)
        section, _, tail = rest.partition("\n== ")
        self.rig.mediawiki.edit_as_human(self.page, head + heading + "\n" + change(section)
                                         + (("\n== " + tail) if tail else ""), summary)

    def mark(self, number: int, mark: str, user: str = "Alice") -> None:
        self.edit_draft(number, lambda section: section.rstrip() + f"\n:{mark} {signature(user, 50)}", mark)

    def drafts(self) -> dict[str, tuple[str, str | None]]:
        """Each draft's status and reason, by the heading of its forum section."""
        with sqlite3.connect(self.rig.state_path()) as connection:
            rows = connection.execute("SELECT heading, status, reason FROM drafts ORDER BY number").fetchall()
        return {heading: (status, reason) for heading, status, reason in rows}

    def sections(self) -> dict[str, str]:
        return {record.heading: record.status for record in self.rig.records().values()}


def ask(mediawiki, forum: str, *headings: str) -> None:
    """Alice asks about Euler's advisors on *forum* once under each of *headings*."""
    page = mediawiki.page_text(forum)
    for minute, heading in enumerate(headings):
        page += new_section(heading, "Who advised Euler?", minute=minute)
    mediawiki.edit_as_human(forum, page, "new questions")
