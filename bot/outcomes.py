"""What one pass did to each section, in words, for the pass's log line.

The watcher's counters say how many; the operator also wants which and why.
Rather than every skip rule logging its own line, a pass compares the state's
records before and after it: each section whose status (or failure count)
changed is named with its new status and the reason the state records.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.forum import is_followup_key
from bot.kinds import TaskKind
from bot.state import SectionRecord, SectionStatus

#: How each new status reads in the log.
VERBS = {SectionStatus.ANSWERED: "answered", SectionStatus.SKIPPED: "skipped", SectionStatus.WAITING: "waiting",
         SectionStatus.REFUSED: "refused", SectionStatus.FAILED: "failed, given up",
         SectionStatus.DRAFTED: "drafted for review", SectionStatus.REJECTED: "rejected by a reviewer",
         SectionStatus.GONE: "gone from the page"}


def snapshot(records: list[SectionRecord]) -> dict[str, tuple[str, int, str | None]]:
    return {record.key: (record.status, record.attempts, record.last_error) for record in records}


def changes(before: dict[str, tuple[str, int, str | None]], after: list[SectionRecord],
            kind_of: Callable[[str], TaskKind | None] = lambda key: None) -> list[str]:
    """Each section whose record a pass changed: ``answered "Heading"``, ``skipped "Heading" (why)``, …; a reply
    to a comment in the thread is named by what it answers (*kind_of* its key: ``follow-up``, ``ping``), a
    follow-up when that is not known."""
    said = []
    for record in after:
        old = before.get(record.key)
        if old == (record.status, record.attempts, record.last_error):
            continue
        kind = kind_of(record.key) or (TaskKind.FOLLOW_UP if is_followup_key(record.key) else None)
        name = f'"{record.heading}"' + (f" ({kind})" if kind and kind != TaskKind.QUESTION else "")
        if record.status == SectionStatus.PENDING and record.attempts > (old[1] if old else 0):
            said.append(f"failed {name}, retried later ({(record.last_error or '')[:200]})")
        elif record.status in VERBS and (old is None or old[0] != record.status):
            why = (f" ({record.last_error[:200]})" if record.last_error and record.status != SectionStatus.ANSWERED
                   else "")
            said.append(f"{VERBS[record.status]} {name}{why}")
    return said
