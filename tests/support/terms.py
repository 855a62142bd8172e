"""SPARQL JSON result terms, as a query service writes them, for the scorers' tests."""

from __future__ import annotations

XSD = "http://www.w3.org/2001/XMLSchema#"


def literal(value: str, datatype: str | None = None, lang: str | None = None) -> dict[str, str]:
    """A literal term: *datatype* is an XSD local name (``integer``), *lang* a language tag."""
    term = {"type": "literal", "value": value}
    if datatype:
        term["datatype"] = XSD + datatype
    if lang:
        term["xml:lang"] = lang
    return term


def entity_uri(qid: str) -> dict[str, str]:
    """A Wikidata entity as a URI term (``wd:`` *qid* written out)."""
    return {"type": "uri", "value": f"http://www.wikidata.org/entity/{qid}"}
