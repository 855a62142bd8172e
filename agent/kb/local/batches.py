"""What every reader of a file hands the store and the search index: batches of N-Triples lines and facts.

The readers (:mod:`agent.kb.local.loaders` for Wikidata's formats and RDF,
:mod:`agent.kb.local.kqapro` for KQA Pro's ``kb.json``) share these types and
the N-Triples writers, so no reader imports another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Fact = tuple[str, str, str, str]  # (entity id, kind, value, language)
_NT_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})
_IRI_ESCAPES = str.maketrans({c: f"%{ord(c):02X}" for c in ' <>"{}|^`\\' + "".join(map(chr, range(33)))})
#: A character either table rewrites: most texts and IRIs have none, and a search is far cheaper than a translate.
_NT_ESCAPED = re.compile("[" + re.escape("".join(map(chr, _NT_ESCAPES))) + "]")
_IRI_ESCAPED = re.compile("[" + re.escape("".join(map(chr, _IRI_ESCAPES))) + "]")


class LoadError(ValueError):
    """A file that cannot be loaded; the message names the file and, where known, the line."""


@dataclass
class Batch:
    """Part of one file, in the forms the store and the search index take."""

    lines: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    #: Entities the file holds whole: their earlier terms and statements go.
    whole: list[str] = field(default_factory=list)
    #: (entity IRI, property id) pairs with a preferred statement (KGTK files with a rank column).
    preferred: list[tuple[str, str]] = field(default_factory=list)
    triples: int = 0
    #: Claims read from a KGTK file without a rank column (each taken as best rank).
    unranked: int = 0


def iri(value: str) -> str:
    """An IRI in N-Triples, with the characters N-Triples forbids in one percent-encoded."""
    return f"<{value.translate(_IRI_ESCAPES) if _IRI_ESCAPED.search(value) else value}>"


def literal(value: str, language: str | None = None, datatype: str | None = None) -> str:
    """A literal in N-Triples, escaped."""
    text = f'"{value.translate(_NT_ESCAPES) if _NT_ESCAPED.search(value) else value}"'
    if language:
        return f"{text}@{language}"
    return f"{text}^^<{datatype}>" if datatype else text
