"""Which revision added each line of the forum page, and who made it.

Signatures are text anyone can type, copy or hide; the page history is not.
A section is identified by the revision that added its heading line, its
author is that revision's user, a follow-up is the revision that added the
comment, and "the bot has replied" means a revision by the bot added lines
to the section.  :class:`Attribution` carries this from one revision of the
page to the next by diffing lines, so each pass reads only the revisions
made since the last one, all of them (:func:`revisions_after` pages through
them).

Lines that come back keep their owner.  A blanking and its revert, an undo,
a section cut and pasted elsewhere (in one revision or two), an archived
section brought back: the lines a revision removed are remembered (the last
:data:`MAX_REMEMBERED_LINES`), and a run of added lines equal to a run of
remembered ones, signed or long enough to be no coincidence, gets its old
owners back.  So a section keeps its identity and the bot's reply stays the
bot's, whoever restored them.

At its first look the bot reads the page's history from its own latest
revision there (or the last :data:`MAX_REVISIONS` revisions when it never
edited the page), so a section added since (backlog included) is known by
its revision too.  Lines older than that, or changed by revisions it could
not read, belong to :data:`UNKNOWN` (or to a revision whose user is
unknown); for them the text (signatures), checked against the bot's own
revisions (:func:`own_revisions`), is all there is.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

log = logging.getLogger(__name__)

#: The owner of lines whose revision is not known (on the page at the bot's first look).
UNKNOWN = 0
#: The revisions read at a first look when the bot never edited the page.
MAX_REVISIONS = 50
#: Lines removed from the page that are remembered, so that they keep their owner if they come back.
MAX_REMEMBERED_LINES = 20000
#: A restored run of lines keeps its owners when it holds a signature's time or this many characters.
RESTORED_CHARS = 200
#: Where a line can come back from, the most recent places are tried, this many at most.
_CANDIDATES = 16
_STAMP = re.compile(r"\d{1,2}:\d{2}, \d{1,2} [A-Z][a-z]+ \d{4} \(UTC\)")


@dataclass
class Attribution:
    """One revision of the page: its text, the revision that added each line, and those revisions' users."""

    revision: int
    text: str
    #: One owner (a revision id, or UNKNOWN) per line of ``text.split("\\n")``.
    owners: list[int]
    users: dict[int, str] = field(default_factory=dict)
    #: Lines removed by earlier revisions, oldest first, with their owners: restored if they come back.
    removed: list[tuple[int, str]] = field(default_factory=list)

    @classmethod
    def first_look(cls, revision: int, text: str) -> Attribution:
        return cls(revision, text, [UNKNOWN] * (text.count("\n") + 1))

    @classmethod
    def created(cls, revision: int, user: str, text: str) -> Attribution:
        """The page's first revision: every line is its author's."""
        return cls(revision, text, [revision] * (text.count("\n") + 1), {revision: user} if user else {})

    def advance(self, revision: int, user: str, text: str) -> Attribution:
        """The attribution of *text*, saved as *revision* by *user* on top of this one."""
        old, new = self.text.split("\n"), text.split("\n")
        # Most edits touch one place: compare only what lies between the common head and tail.
        head = 0
        while head < min(len(old), len(new)) and old[head] == new[head]:
            head += 1
        # A section copied above its original (same heading, same text) must not take its lines: widen the
        # compared part to whole sections, where the longest match, the original, wins.
        while head > 0 and not new[head - 1].startswith("="):
            head -= 1
        head = max(head - 1, 0)
        tail = 0
        while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
            tail += 1
        while tail > 0 and not new[len(new) - tail].startswith("="):
            tail -= 1
        owners: list[int | None] = list(self.owners[:head])
        removed: list[tuple[int, str]] = []
        added: list[tuple[int, int]] = []  # runs of added lines: (start, end) in new
        matcher = difflib.SequenceMatcher(None, old[head:len(old) - tail], new[head:len(new) - tail])
        for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
            if tag == "equal":
                owners += self.owners[head + old_start:head + old_end]
                continue
            removed += [(self.owners[head + index], old[head + index]) for index in range(old_start, old_end)]
            if new_end > new_start:
                added.append((head + new_start, head + new_end))
                owners += [None] * (new_end - new_start)
        owners += self.owners[len(self.owners) - tail:] if tail else []
        pool = self.removed + removed
        for start, end in added:
            owners[start:end] = [owner if owner is not None else revision
                                 for owner in _restored(new[start:end], pool)]
        users = dict(self.users)
        if user:
            users[revision] = user
        remembered = _remembered(pool)
        present = set(owners) | {owner for owner, _ in remembered}
        return Attribution(revision, text, owners, {owner: name for owner, name in users.items() if owner in present},
                           remembered)

    def to_json(self) -> str:
        runs: list[list[int]] = []
        for owner in self.owners:
            if runs and runs[-1][0] == owner:
                runs[-1][1] += 1
            else:
                runs.append([owner, 1])
        return json.dumps({"revision": self.revision, "runs": runs,
                           "users": {str(key): value for key, value in self.users.items()},
                           "removed": [list(entry) for entry in self.removed]})

    @classmethod
    def from_json(cls, data: str, text: str) -> Attribution:
        loaded = json.loads(data)
        owners = [owner for owner, count in loaded["runs"] for _ in range(count)]
        if len(owners) != text.count("\n") + 1:
            raise ValueError("the stored attribution does not match the stored text")
        return cls(loaded["revision"], text, owners, {int(key): value for key, value in loaded["users"].items()},
                   [(int(owner), str(line)) for owner, line in loaded.get("removed", [])])


def _restored(lines: list[str], pool: list[tuple[int, str]]) -> list[int | None]:
    """The owners *lines* (added together) had when they were last on the page; ``None`` for new ones.

    A run of added lines equal to a run of removed ones is restored when it holds a signature's time or
    :data:`RESTORED_CHARS` characters: a heading or a "Thanks!" alone coming back may be new text.  The
    longest run wins, the latest removed among equals.  Linear in the lines and the pool.
    """
    places: dict[str, list[int]] = {}
    for position, (_, line) in enumerate(pool):
        if line.strip():
            places.setdefault(line, []).append(position)
    owners: list[int | None] = [None] * len(lines)
    index = 0
    while index < len(lines):
        best_length, best_start = 0, -1
        for start in reversed(places.get(lines[index], [])[-_CANDIDATES:]):
            length = 0
            while (index + length < len(lines) and start + length < len(pool)
                   and pool[start + length][1] == lines[index + length]):
                length += 1
            if length > best_length:
                best_length, best_start = length, start
        run = lines[index:index + best_length]
        if best_length and (any(_STAMP.search(line) for line in run)
                            or sum(len("".join(line.split())) for line in run) >= RESTORED_CHARS):
            owners[index:index + best_length] = [owner for owner, _ in pool[best_start:best_start + best_length]]
        index += max(best_length, 1)
    return owners


def _remembered(pool: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The removed lines worth keeping: the latest :data:`MAX_REMEMBERED_LINES` that are not blank."""
    kept = [entry for entry in pool if entry[1].strip()]
    return kept[-MAX_REMEMBERED_LINES:]


def line_starts(text: str) -> list[int]:
    """The offset at which each line of *text* starts."""
    starts = [0]
    position = text.find("\n")
    while position != -1:
        starts.append(position + 1)
        position = text.find("\n", position + 1)
    return starts


@dataclass(frozen=True)
class Revision:
    id: int
    user: str
    text: str
    #: The page's first revision (no parent).
    creation: bool = False


def listed_revisions(site, parameters: dict[str, str]) -> Iterator[dict]:
    """Every revision a ``prop=revisions`` query lists, following the API's continuation.

    A read through pywikibot's request machinery (its timeouts, retries, maxlag and ``Retry-After``
    handling).  ``rvlimit=max`` is 500 revisions with content for a bot account (5,000 without), less when
    the answer would pass the API's size limit: the API then says where to go on.
    """
    parameters = {"action": "query", "prop": "revisions", "formatversion": "2", "rvlimit": "max", **parameters}
    while True:
        reply = site.simple_request(**parameters).submit()
        pages = reply.get("query", {}).get("pages", [])
        yield from pages[0].get("revisions", []) if pages else []
        if "continue" not in reply:
            return
        parameters.update({key: str(value) for key, value in reply["continue"].items()})


def _with_content(revision: dict) -> Revision | None:
    slot = revision.get("slots", {}).get("main", {})
    if "content" not in slot:  # hidden (revision deletion): its changes are attributed to the next one
        return None
    return Revision(revision["revid"], revision.get("user", ""), slot["content"],
                    creation=revision.get("parentid") == 0)


def latest_revisions(site, title: str, until: int, since: int | None = None) -> list[Revision]:
    """The revisions of *title* up to *until*, oldest first (hidden ones left out): from *since* (included)
    when given, else the last :data:`MAX_REVISIONS`."""
    if since is not None:
        return [revision for revision in (_with_content(item) for item in listed_revisions(site, {
            "titles": title, "rvprop": "ids|user|content", "rvslots": "main", "rvdir": "newer",
            "rvstartid": str(since), "rvendid": str(until)})) if revision is not None]
    reply = site.simple_request(action="query", prop="revisions", titles=title,
                                rvprop="ids|user|content", rvslots="main", rvdir="older", rvstartid=str(until),
                                rvlimit=str(MAX_REVISIONS), formatversion="2").submit()
    pages = reply["query"]["pages"]
    found = [_with_content(revision) for revision in (pages[0].get("revisions", []) if pages else [])]
    return [revision for revision in found if revision is not None][::-1]


def revisions_after(site, title: str, after: int, until: int) -> Iterator[Revision]:
    """Every revision of *title* newer than *after* up to *until*, oldest first (hidden ones left out)."""
    for item in listed_revisions(site, {"titles": title, "rvprop": "ids|user|content", "rvslots": "main",
                                  "rvdir": "newer", "rvstartid": str(after), "rvendid": str(until)}):
        revision = _with_content(item)
        if revision is not None and revision.id != after:
            yield revision


@dataclass(frozen=True)
class OwnEdit:
    """One revision of the page by the bot's own account."""

    revision: int
    timestamp: datetime
    comment: str
    #: The revision it was saved on (0: it created the page).
    parent: int = 0
    #: Reads the text of a revision of the page (``None`` when hidden), read once: what the edit changed.
    texts: Callable[[int], str | None] | None = field(default=None, compare=False, repr=False)


def own_revisions(site, title: str, user: str, latest_only: bool = False) -> list[OwnEdit]:
    """The revisions of *title* saved by *user*, oldest first (only the latest one, if *latest_only*)."""
    parameters = {"titles": title, "rvuser": user, "rvprop": "ids|timestamp|comment", "rvdir": "older"}
    if latest_only:
        parameters["rvlimit"] = "1"
    texts = _text_reader(site)
    found = []
    for item in listed_revisions(site, parameters):
        found.append(OwnEdit(item["revid"], datetime.fromisoformat(item["timestamp"].replace("Z", "+00:00")),
                             item.get("comment", ""), item.get("parentid", 0), texts))
        if latest_only:
            break
    return found[::-1]


def _text_reader(site) -> Callable[[int], str | None]:
    """A reader of revisions' texts by id, each asked of the wiki once."""
    read: dict[int, str | None] = {}

    def text(revision: int) -> str | None:
        if revision not in read:
            reply = site.simple_request(action="query", prop="revisions", revids=str(revision),
                                        rvprop="ids|user|content", rvslots="main", formatversion="2").submit()
            pages = reply.get("query", {}).get("pages", [])
            found = _with_content(pages[0]["revisions"][0]) if pages and pages[0].get("revisions") else None
            read[revision] = found.text if found is not None else None
        return read[revision]

    return text
