"""Which revision added each line of the forum page, and who made it.

Signatures are text anyone can type, copy or hide; the page history is not.
A section is identified by the revision that added its heading line, its
author is that revision's user, a follow-up is the revision that added the
comment, and "the bot has replied" means a revision by the bot added lines
to the section.  :class:`Attribution` carries this from one revision of the
page to the next by diffing lines, so each pass only reads the revisions
made since the last one.

At its first look the bot reads the page's last :data:`MAX_REVISIONS`
revisions, so a section added recently (backlog included) is known by its
revision too.  Lines older than that window, or changed by revisions it
could not read, belong to :data:`UNKNOWN` (or to a revision whose user is
unknown); for them the text (signatures) is all there is.
"""

from __future__ import annotations

import difflib
import json
import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

#: The owner of lines whose revision is not known (on the page at the bot's first look).
UNKNOWN = 0
#: At most this many revisions are read in one pass; beyond, the changes are attributed in one step.
MAX_REVISIONS = 50


@dataclass
class Attribution:
    """One revision of the page: its text, the revision that added each line, and those revisions' users."""

    revision: int
    text: str
    #: One owner (a revision id, or UNKNOWN) per line of ``text.split("\\n")``.
    owners: list[int]
    users: dict[int, str] = field(default_factory=dict)

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
        owners = list(self.owners[:head])
        matcher = difflib.SequenceMatcher(None, old[head:len(old) - tail], new[head:len(new) - tail])
        for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
            if tag == "equal":
                owners += self.owners[head + old_start:head + old_end]
            else:
                owners += [revision] * (new_end - new_start)
        owners += self.owners[len(self.owners) - tail:] if tail else []
        present = set(owners)
        users = {owner: name for owner, name in self.users.items() if owner in present}
        if user:
            users[revision] = user
        return Attribution(revision, text, owners, users)

    def to_json(self) -> str:
        runs: list[list[int]] = []
        for owner in self.owners:
            if runs and runs[-1][0] == owner:
                runs[-1][1] += 1
            else:
                runs.append([owner, 1])
        return json.dumps({"revision": self.revision, "runs": runs,
                           "users": {str(key): value for key, value in self.users.items()}})

    @classmethod
    def from_json(cls, data: str, text: str) -> Attribution:
        loaded = json.loads(data)
        owners = [owner for owner, count in loaded["runs"] for _ in range(count)]
        if len(owners) != text.count("\n") + 1:
            raise ValueError("the stored attribution does not match the stored text")
        return cls(loaded["revision"], text, owners, {int(key): value for key, value in loaded["users"].items()})


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


def latest_revisions(site, title: str, until: int) -> list[Revision]:
    """The last :data:`MAX_REVISIONS` revisions of *title* up to *until*, oldest first (hidden ones left out).

    A read through pywikibot's request machinery, like :func:`revisions_after`.
    """
    reply = site.simple_request(action="query", prop="revisions", titles=title,
                                rvprop="ids|user|content", rvslots="main", rvdir="older", rvstartid=str(until),
                                rvlimit=str(MAX_REVISIONS), formatversion="2").submit()
    pages = reply["query"]["pages"]
    found = [Revision(revision["revid"], revision.get("user", ""), revision["slots"]["main"]["content"],
                      creation=revision.get("parentid") == 0)
             for revision in (pages[0].get("revisions", []) if pages else [])
             if "content" in revision.get("slots", {}).get("main", {})]
    return found[::-1]


def revisions_after(site, title: str, after: int, until: int) -> list[Revision] | None:
    """The revisions of *title* newer than *after* up to *until*, oldest first; ``None`` when too many.

    A read through pywikibot's request machinery (its timeouts, retries,
    maxlag and ``Retry-After`` handling).
    """
    found: list[Revision] = []
    parameters = {"action": "query", "prop": "revisions", "titles": title, "rvprop": "ids|user|content",
                  "rvslots": "main", "rvdir": "newer", "rvstartid": str(after), "rvendid": str(until),
                  "rvlimit": "50", "formatversion": "2"}
    while True:
        reply = site.simple_request(**parameters).submit()
        pages = reply["query"]["pages"]
        for revision in pages[0].get("revisions", []) if pages else []:
            if revision["revid"] == after:
                continue
            slot = revision.get("slots", {}).get("main", {})
            if "content" not in slot:  # hidden (revision deletion): its changes are attributed to the next one
                continue
            found.append(Revision(revision["revid"], revision.get("user", ""), slot["content"]))
        if len(found) > MAX_REVISIONS:
            return None
        if "continue" not in reply:
            return found
        parameters.update(reply["continue"])
