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
it (a search hit, an entry, a result row, an earlier note).  On another graph
the terms that count are those its profile names as items, classes or
properties (``dbr:Paris\\,_Texas``, ``pv:memberOf``, KQA Pro's ``<Q30>``),
written as the graph writes its IDs.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin
from collections.abc import Iterable, Sequence

from agent.graph import LEXEME_PART_ID, PAGE_ID, WIKIDATA, GraphProfile, unescape_local
from agent.kb.base import SearchHit
from agent.kb.dialect import PREFIXES
from agent.sparql_lexer import tokenize
from agent.trace import Named

ENTITY_ID = re.compile(f"(?:{LEXEME_PART_ID}|{PAGE_ID})")
_WORD_ID = re.compile(r"(?<![\w-])" + ENTITY_ID.pattern + r"(?![\w-])")
_WIKIDATA = "http://www.wikidata.org/"
#: Prefixes whose local names are entity IDs (``wd:``, ``wdt:``, ``p:``, ``ps:``, ``pq:``, ...).
_ID_PREFIXES = frozenset(prefix for prefix, namespace in PREFIXES.items() if namespace.startswith(_WIKIDATA))
#: How every note begins; the prompt's shrinking of old steps keeps the note whole.
NOTE_OPENING = "IDs new to this run"
DESCRIPTION_CHARS = 80
#: Between an item's label and its description in a note.
DESCRIPTION_MARK = " — "
_LOWER_WORDS = re.compile(r"[a-z-]+")


def query_ids(sparql: str, graph: GraphProfile = WIKIDATA) -> list[str]:
    """The entity IDs *sparql* names as terms of *graph* (Wikidata's by default), each once, in order."""
    if graph.entries.model != "wikibase":
        return _graph_query_ids(sparql, graph)
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


def _graph_query_ids(sparql: str, graph: GraphProfile) -> list[str]:
    prefixes = dict(graph.prefixes)
    found: dict[str, None] = {}
    tokens = [token for token in tokenize(sparql) if token.kind not in ("space", "comment")]
    for index, token in enumerate(tokens):
        if token.kind == "pname" and index > 0 and tokens[index - 1].text.upper() == "PREFIX" \
                and index + 1 < len(tokens) and tokens[index + 1].kind == "iri":
            prefixes[token.text.rstrip(":")] = tokens[index + 1].text[1:-1]
            continue
        iri = None
        if token.kind == "pname":
            prefix, _, local = token.text.partition(":")
            if prefix in prefixes:
                iri = prefixes[prefix] + unescape_local(local)
        elif token.kind == "iri" and (index == 0 or tokens[index - 1].kind != "pname"):
            iri = urljoin(graph.base, token.text[1:-1]) if graph.base else token.text[1:-1]
        graph_id = graph.id_of(iri) if iri else None
        if graph_id is not None:
            found[graph_id] = None
    return list(found)


def _graph_id_words(graph: GraphProfile) -> re.Pattern[str]:
    """IDs of *graph* as words of a text: its prefixed names (escapes included), and bare IDs of its patterns."""
    prefixes = "|".join(re.escape(prefix) for prefix in sorted(graph.prefixes, key=len, reverse=True))
    local = r"(?:[\w:%-]|\\[_~.\-!$&'()*+,;=/?#@%]|\.(?=[\w:%\\-]))+"
    bare = r"|[^\s()\[\]{},;:\"'<>]+" if graph.bare_ids else ""  # any word may be a bare ID (KQA Pro's Q30)
    return re.compile(rf"(?<![\w:%\\-])(?:(?:{prefixes}):{local}|<[^<>\s]+>{bare})(?![\w%-])")


def shown_ids(texts: Iterable[str], graph: GraphProfile = WIKIDATA) -> set[str]:
    """Every entity ID of *graph* written as a word in *texts* (observations the model has read)."""
    if graph.entries.model == "wikibase":
        return {match.group(0) for text in texts for match in _WORD_ID.finditer(text)}
    found = {match.group(0) for text in texts for match in _graph_id_words(graph).finditer(text)}
    return found | {word[1:-1] for word in found if word.startswith("<")}  # KQA Pro's <population> is population


def unseen_ids(sparql: str, shown: set[str], graph: GraphProfile = WIKIDATA) -> list[str]:
    """The IDs of *sparql* that are not in *shown*, in order."""
    return [entity_id for entity_id in query_ids(sparql, graph) if entity_id not in shown]


def naming_note(ids: list[str], names: Sequence[SearchHit | Named], labels_only: bool = False) -> str:
    """One line naming each of *ids* by the knowledge base's *names* (its hits, or what a step kept of them); an
    ID without one does not exist there.

    An item gets its label and description (which tells two "Euler" apart), a
    property its label and datatype.  With *labels_only*, as an old step shows
    the note, each gets its label alone: the model read the rest when it was new.
    """
    by_id = {name.id: name for name in names}
    said = [f"{entity_id} = {by_id[entity_id].label}{_after_label(by_id[entity_id], labels_only)}"
            if entity_id in by_id else f"{entity_id} does not exist" for entity_id in ids]
    return f"{NOTE_OPENING} (check them): " + "; ".join(said) + "."


def _after_label(name: SearchHit | Named, labels_only: bool) -> str:
    """What follows a name's label in the note: a property's datatype, an item's description (cut)."""
    if name.datatype:
        # A datatype that is not lower-case words (``commonsMedia``) has always stayed in the short note.
        return "" if labels_only and _LOWER_WORDS.fullmatch(name.datatype) else f" [{name.datatype}]"
    description = " ".join(name.description.split())
    if labels_only or not description:
        return ""
    if len(description) > DESCRIPTION_CHARS:
        description = description[:DESCRIPTION_CHARS - 1] + "…"
    return f"{DESCRIPTION_MARK}{description}"


def split_note(observation: str) -> tuple[str, str]:
    """An observation without its closing naming note, and the note ("" when it has none)."""
    body, separator, note = observation.rpartition("\n" + NOTE_OPENING)
    if not separator:
        return observation, ""
    return body, NOTE_OPENING + note
