"""Know before use: the IDs in a query that no observation of the run has shown are named before the model goes on.

A model types Wikidata IDs from memory, and a wrong one does not fail: it
returns rows about something else, or none.  On upstream's 387 real GPT-4o
runs on QALD-10, 85 final queries used an ID no tool had shown in that run
(P31, P279 and Q5 aside), and those runs scored 48.0 F1 against 75.6 for the
rest.  So when a query the model runs holds such IDs, its observation ends
with a note naming each one with its label and description (one entity
lookup through the knowledge base, no model call): a wrong ID then reads as
the wrong thing.  GRASP (Walter & Bast, 2025) calls the principle "know
before use".

Only IDs written as Wikidata terms count (``wd:Q42``, ``wdt:P31``,
``<http://www.wikidata.org/entity/Q42>``, ...): a ``"Q42"`` inside a string
is text.  An ID counts as shown once any earlier observation of the run holds
it (a search hit, an entry, a result row, an earlier note).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent.kb.base import SearchHit
from agent.kb.dialect import PREFIXES
from agent.sparql_lexer import tokenize

ENTITY_ID = re.compile(r"[QPL][1-9][0-9]*(?:-[FS][1-9][0-9]*)?")
_WORD_ID = re.compile(r"(?<![\w-])[QPL][1-9][0-9]*(?:-[FS][1-9][0-9]*)?(?![\w-])")
_WIKIDATA = "http://www.wikidata.org/"
#: Prefixes whose local names are entity IDs (``wd:``, ``wdt:``, ``p:``, ``ps:``, ``pq:``, ...).
_ID_PREFIXES = frozenset(prefix for prefix, namespace in PREFIXES.items() if namespace.startswith(_WIKIDATA))
#: How every note begins; the prompt's shrinking of old steps keeps the note whole.
NOTE_OPENING = "IDs new to this run"
DESCRIPTION_CHARS = 80
#: Between an item's label and its description in a note.
DESCRIPTION_MARK = " — "


def query_ids(sparql: str) -> list[str]:
    """The entity IDs *sparql* names as Wikidata terms, each once, in order."""
    found: dict[str, None] = {}
    for token in tokenize(sparql):
        if token.kind == "pname":
            prefix, _, local = token.text.partition(":")
            if prefix in _ID_PREFIXES and ENTITY_ID.fullmatch(local):
                found[local] = None
        elif token.kind == "iri" and token.text[1:].startswith(_WIKIDATA):
            local = token.text[1:-1].rstrip("/").rsplit("/", 1)[-1]
            if ENTITY_ID.fullmatch(local):
                found[local] = None
    return list(found)


def shown_ids(texts: Iterable[str]) -> set[str]:
    """Every entity ID written as a word in *texts* (observations the model has read)."""
    return {match.group(0) for text in texts for match in _WORD_ID.finditer(text)}


def unseen_ids(sparql: str, shown: set[str]) -> list[str]:
    """The IDs of *sparql* that are not in *shown*, in order."""
    return [entity_id for entity_id in query_ids(sparql) if entity_id not in shown]


def naming_note(ids: list[str], hits: list[SearchHit]) -> str:
    """One line naming each of *ids* by the knowledge base's *hits*; an ID without a hit does not exist there.

    An item gets its label and description (which tells two "Euler" apart), a
    property its label and datatype.
    """
    by_id = {hit.id: hit for hit in hits}
    names = []
    for entity_id in ids:
        hit = by_id.get(entity_id)
        if hit is None:
            names.append(f"{entity_id} does not exist")
            continue
        if hit.datatype:
            names.append(f"{entity_id} = {hit.label} [{hit.datatype}]")
            continue
        description = " ".join(hit.description.split())
        if len(description) > DESCRIPTION_CHARS:
            description = description[:DESCRIPTION_CHARS - 1] + "…"
        names.append(f"{entity_id} = {hit.label}" + (f"{DESCRIPTION_MARK}{description}" if description else ""))
    return f"{NOTE_OPENING} (check them): " + "; ".join(names) + "."


def shorten_note(note: str) -> str:
    """A note as an old step shows it: each ID with its label only (the model read the rest when it was new)."""
    opening, _, names = note.partition(": ")
    short = [re.sub(r" \[[a-z-]+\]$", "", name.split(DESCRIPTION_MARK)[0]) for name in names[:-1].split("; ")]
    return f"{opening}: " + "; ".join(short) + "." if names else note


def split_note(observation: str) -> tuple[str, str]:
    """An observation without its closing naming note, and the note ("" when it has none)."""
    body, separator, note = observation.rpartition("\n" + NOTE_OPENING)
    if not separator:
        return observation, ""
    return body, NOTE_OPENING + note
