"""One pass over the forum: which sections to answer, answering them, counting what happened.

Shaped like pywikibot's ``BaseBot``: a generator of candidate sections with
skip rules, :meth:`Watcher.treat` for one section, and counters printed at
the end.  A failure in one section (model, knowledge base, wiki) is recorded
and retried later with backoff; it never ends the pass or the watcher.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from agent.trace import AgentResult
from bot.config import BotConfig
from bot.forum import Request, Section, extract_request, normalize_user, page_opted_out, parse_sections
from bot.render import render_reply
from bot.state import State
from bot.wiki import EmergencyStop, ForumPage

log = logging.getLogger(__name__)
Answerer = Callable[[Request], AgentResult]


def edit_summary(heading: str) -> str:
    """A summary naming the section (as a section link), with nothing from the heading that could break it."""
    clean = re.sub(r"[\[\]{}|<>*/]", "", heading)
    clean = " ".join(clean.split())[:120]
    return f"/* {clean} */ reply with a SPARQL query written by a bot (please check it)"


@dataclass
class Watcher:
    forum: ForumPage
    state: State
    answer: Answerer
    config: BotConfig
    show: Callable[[str], None] = print
    counter: Counter = field(default_factory=Counter)
    #: Set to stop after the section being answered now.
    stopping: threading.Event = field(default_factory=threading.Event)

    def run_pass(self, answer_backlog: bool = False) -> Counter:
        """Look at the page once; answer new sections that are due."""
        page = self.forum.title
        try:
            if self.config.live and self.forum.stopped():
                log.warning("emergency stop: %s is not empty; editing nothing", self.forum.stop_page)
                self.counter["stopped"] += 1
                return self.counter
            revision = self.forum.latest_revision()
            if revision is None:
                log.error("the page %s does not exist", page)
                return self.counter
            if revision == self.state.last_revision(page) and not self._retries_due():
                self.counter["unchanged"] += 1
                return self.counter
            text, revision = self.forum.read()
        except EmergencyStop:
            raise
        except Exception as error:  # the wiki is down: try again next pass
            log.error("cannot read %s: %s", page, error)
            self.counter["wiki errors"] += 1
            return self.counter
        first_look = not self.state.knows_page(page)
        sections = parse_sections(text)
        for section in sections:
            backlog = first_look and not answer_backlog
            self.state.add(page, section.key, section.heading, "backlog" if backlog else "pending")
        self.state.set_last_revision(page, revision)
        if first_look and not answer_backlog:
            log.info("first look at %s: %d existing sections are backlog and will not be answered",
                     page, len(sections))
        for section in self.candidates(text, sections):
            if self.stopping.is_set():
                break
            self.treat(section)
        return self.counter

    def _retries_due(self) -> bool:
        now = time.time()
        return any(record.status == "pending" and record.attempts and record.next_attempt <= now
                   for record in self.state.sections(self.forum.title))

    def candidates(self, text: str, sections: list[Section]) -> Iterator[Section]:
        """Sections due for an answer, at most ``max_sections_per_pass``, with skip rules applied."""
        bot = normalize_user(self.forum.username)
        if page_opted_out(text, bot):
            log.info("the page opts out of %s", bot)
            return
        given = 0
        for section in sections:
            record = self.state.section(self.forum.title, section.key)
            if record is None or record.status != "pending" or record.next_attempt > time.time():
                continue
            if section.replied_by(bot):
                self.state.record_answered(self.forum.title, section.key, None)
                self.counter["already answered"] += 1
                continue
            reason = self.skip_reason(section, bot)
            if reason:
                self.state.record_skipped(self.forum.title, section.key, reason)
                self.counter["skipped"] += 1
                log.info("skipping %r: %s", section.heading, reason)
                continue
            if given >= self.config.max_sections_per_pass:
                return
            given += 1
            yield section

    @staticmethod
    def skip_reason(section: Section, bot: str) -> str | None:
        if section.author is None:
            return "no signature yet"
        if section.author == bot:
            return "started by the bot"
        if section.opted_out(bot):
            return "the section opts out of bots"
        return None

    def treat(self, section: Section) -> None:
        """Answer one section: run the agent, store the trace, post, then mark it answered."""
        page = self.forum.title
        self.counter["read"] += 1
        request = extract_request(section)
        log.info("answering %r", section.heading)
        try:
            result = self.answer(request)
        except Exception as error:
            self._fail(section, f"the agent failed: {error}")
            return
        self.state.record_trace(page, section.key, result.to_dict())
        if result.stop_reason in ("llm_error", "kb_error"):
            self._fail(section, f"{result.stop_reason}: {result.stop_message}")
            return
        if result.final_sparql is None and not self.config.reply_without_answer:
            self.state.record_skipped(page, section.key, f"no query found ({result.stop_reason}); staying silent")
            self.counter["no answer"] += 1
            return
        reply = render_reply(result, request, max_chars=self.config.reply_max_chars)
        try:
            outcome = self.forum.post_reply(section.key, reply, edit_summary(section.heading))
        except EmergencyStop as stop:
            log.warning("emergency stop: %s; editing nothing", stop)
            self.stopping.set()
            self.counter["stopped"] += 1
            return
        except Exception as error:
            self._fail(section, f"saving failed: {error}")
            return
        if outcome.status == "posted":
            self.state.record_answered(page, section.key, outcome.revision)
            self.counter["written"] += 1
        elif outcome.status == "previewed":
            self.show(f"--- reply to {section.heading!r} (dry run: nothing was saved) ---\n{reply}\n"
                      f"--- diff ---\n{outcome.diff}")
            self.counter["previewed"] += 1
        elif outcome.status == "already-answered":
            self.state.record_answered(page, section.key, None)
            self.counter["already answered"] += 1
        else:
            self.state.record_skipped(page, section.key, outcome.status)
            self.counter["skipped"] += 1

    def _fail(self, section: Section, error: str) -> None:
        log.error("%r: %s", section.heading, error)
        self.state.record_failure(self.forum.title, section.key, error, self.config.retry_minutes * 60,
                                  self.config.max_attempts)
        self.counter["failed"] += 1
