"""Turn knowledge-base answers into the text the model reads.

The forms follow what an expert sees on Wikidata: ``label (ID): description``
lines, a compact table of query results with the middle left out, and an
entity's edges as JSON keyed by ``label (PID)``.  Every backend's answer goes
through these functions, so the model sees one shape whatever it talks to.

The ``observe_*`` functions make the text and, beside it, what it shows as
data (:class:`agent.trace.Seen`): one place makes both, so what a reader
other than the model sees of a step (:mod:`agent.summaries`) is never read
back from the text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agent.graph import ENTITY_ID, ENTITY_ID_RE, PROPERTY_ID
from agent.kb.dialect import ENTITY, PREFIXES
from agent.kb.base import Entry, PropertyExample, Qualifier, QueryResult, QueryStatus, SearchResults, Term, Value
from agent.trace import Example, Named, Seen, Step

ENTITY_PREFIX = ENTITY
#: Wikidata IRI namespaces and the prefixes the query service knows them by, longest first, from the
#: project's one namespace table (entities become bare IDs instead).
IRI_PREFIXES: tuple[tuple[str, str], ...] = tuple(sorted(
    ((namespace, f"{prefix}:") for prefix, namespace in PREFIXES.items()
     if namespace.startswith(("http://www.wikidata.org/", "http://wikiba.se/")) and namespace != ENTITY),
    key=lambda pair: -len(pair[0])))
#: The query service's label language: its labels are shown without their ``@en`` tag.
SERVICE_LANGUAGE = "en"
TABLE_HEAD_ROWS = 5
TABLE_TAIL_ROWS = 5
MAX_CELL_CHARS = 200
XSD = "http://www.w3.org/2001/XMLSchema#"


def shorten_iri(iri: str) -> str:
    """``http://www.wikidata.org/entity/Q42`` becomes ``Q42``; other Wikidata IRIs get their WDQS prefix."""
    for namespace, prefix in IRI_PREFIXES:  # before entities: wds: lies inside the entity namespace
        if iri.startswith(namespace):
            return prefix + iri[len(namespace):]
    if iri.startswith(ENTITY_PREFIX):
        return iri[len(ENTITY_PREFIX):]
    return iri


def format_term(term: Term, shown: dict[str, str] | None = None) -> str:
    """One SPARQL JSON term as a table cell; *shown* gives the text of IRIs a graph shows otherwise."""
    value = term.get("value", "")
    if term.get("type") == "uri":
        text = shown[value] if shown and value in shown else shorten_iri(value)
    elif "xml:lang" in term and term["xml:lang"] != SERVICE_LANGUAGE:
        text = f"{value}@{term['xml:lang']}"
    elif term.get("datatype") == XSD + "dateTime" and value.endswith("T00:00:00Z"):
        text = value[: -len("T00:00:00Z")]
    else:
        text = value
    text = " ".join(text.split())
    if len(text) > MAX_CELL_CHARS:
        text = text[: MAX_CELL_CHARS - 1] + "…"
    return text


def format_table(variables: list[str], rows: list[dict[str, Term]], head: int = TABLE_HEAD_ROWS,
                 tail: int = TABLE_TAIL_ROWS, shown: dict[str, str] | None = None) -> str:
    """A tab-separated table with at most *head* first and *tail* last rows (*shown*: see :func:`format_term`)."""
    lines = ["\t".join(variables)]
    kept = rows if len(rows) <= head + tail else rows[:head] + rows[-tail:] if tail else rows[:head]
    for index, row in enumerate(kept):
        if len(rows) > head + tail and index == head:
            lines.append(f"... ({len(rows) - head - tail} rows omitted) ...")
        lines.append("\t".join(format_term(row[name], shown) if name in row else "" for name in variables))
    lines.append(rows_line(len(rows)))
    return "\n".join(lines)


def rows_line(count: int) -> str:
    """A table's last line: ``(12 rows)``."""
    return f"({count} row{'s' if count != 1 else ''})"


def format_query_result(result: QueryResult) -> str:
    """The four signals of ``execute_sparql``: rows, empty, syntax error, timeout (and other errors)."""
    if result.status == QueryStatus.SYNTAX_ERROR:
        return f"Syntax error: {result.message}"
    if result.status == QueryStatus.TIMEOUT:
        text = "The query timed out." + (f" {result.message}" if result.message else "")
        if result.bindings:
            text += " The rows that arrived before it stopped (incomplete):\n" + format_table(
                result.variables, result.bindings, shown=result.shown)
        return text
    if result.status == QueryStatus.ERROR:
        return f"Error: {result.message}"
    if result.boolean is not None:
        return str(result.boolean)
    if result.status == QueryStatus.EMPTY or not result.bindings:
        return "The query returned an empty result."
    text = format_table(result.variables, result.bindings, shown=result.shown)
    if result.truncated:
        text += f"\n(the response was cut: {result.message})"
    return text


#: What a property's datatype means for a query, shown beside search hits.
DATATYPE_GLOSSES = {
    "wikibase-item": "an item",
    "external-id": "an identifier string: compare with a plain literal",
    "string": "a plain literal",
    "url": "an IRI: compare with STR()",
    "commonsMedia": "a Commons file IRI",
    "time": "an xsd:dateTime: use YEAR() or compare with dates",
    "quantity": "a number; its unit via p:/psv:",
    "monolingualtext": "a literal with a language tag",
    "globe-coordinate": "a geo:wktLiteral point",
    "wikibase-property": "a property",
}
#: Descriptions of items that live in the scholarly graph, outside the main query service graph.
SCHOLARLY = re.compile(r"\b(?:scholarly|scientific) article\b|\bpreprint\b|\bdoctoral thesis\b", re.IGNORECASE)


def format_search(results: SearchResults, max_items: int = 8, max_properties: int = 4) -> str:
    """Hits as ``label (ID): description``; scholarly items marked, properties with their datatype's meaning."""
    return observe_search(results, max_items, max_properties)[0]


def observe_search(results: SearchResults, max_items: int = 8, max_properties: int = 4) -> tuple[str, Seen]:
    """A search's observation (:func:`format_search`) and the hits it shows, as data."""
    seen = Seen(hits=[Named.of(hit) for hit in results.items[:max_items]],
                properties=[Named.of(hit) for hit in results.properties[:max_properties]])
    lines = [item_line(hit) for hit in seen.hits]
    if results.properties:
        if lines:
            lines.append("")
        lines.append("Properties:")
        lines += [property_line(hit) for hit in seen.properties]
    return ("\n".join(lines) if lines else "No entities or properties found."), seen


def item_line(hit: Named) -> str:
    """An item found: ``label (ID): description``, marked when it lives in the scholarly graph."""
    line = f"{hit.label} ({hit.id}): {hit.description}".rstrip(": ")
    return line + " [scholarly graph]" if SCHOLARLY.search(hit.description) else line


def property_line(hit: Named) -> str:
    """A property found: ``label (ID) [datatype: what it means for a query]: description``."""
    gloss = DATATYPE_GLOSSES.get(hit.datatype, "")
    datatype = f" [{hit.datatype}{': ' + gloss if gloss else ''}]" if hit.datatype else ""
    return f"{hit.label} ({hit.id}){datatype}: {hit.description}".rstrip(": ")


def _value_text(value: Value) -> str:
    return f"{value.text} ({value.id})" if value.id else value.text


def _grouped(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Values by key; a key seen more than once gets a list."""
    grouped: dict[str, Any] = {}
    for key, value in pairs:
        if key in grouped:
            previous = grouped[key]
            grouped[key] = (previous if isinstance(previous, list) else [previous]) + [value]
        else:
            grouped[key] = value
    return grouped


def _qualifiers(qualifiers: list[Qualifier]) -> dict[str, Any]:
    return _grouped([(f"{q.property_label} ({q.property_id})", _value_text(q.value)) for q in qualifiers])


def entry_as_dict(entry: Entry) -> dict[str, Any]:
    """Edges keyed by ``label (PID)``: a value, or a list of values; a value with qualifiers is an object."""
    edges = []
    for claim in entry.claims:
        value: Any = _value_text(claim.value)
        if claim.rank == "preferred":
            value += " [preferred]"
        if claim.qualifiers:
            value = {"value": value, "qualifiers": _qualifiers(claim.qualifiers)}
        edges.append((f"{claim.property_label} ({claim.property_id})", value))
    return _grouped(edges)


def format_entry(entry: Entry) -> str:
    """The header line, the statements as JSON, and a note on ranks.

    The note comes when a preferred value hides others from ``wdt:``.
    """
    return observe_entry(entry)[0]


def observe_entry(entry: Entry) -> tuple[str, Seen]:
    """An entry's observation (:func:`format_entry`) and, as data, the entry, its number of statements and the
    properties they use (each once, in order)."""
    properties = {claim.property_id: Named(claim.property_id, claim.property_label) for claim in entry.claims}
    seen = Seen(entity=Named(entry.id, entry.label, entry.description), statements=len(entry.claims),
                properties=list(properties.values()))
    header = f"{entry.label} ({entry.id})" + (f": {entry.description}" if entry.description else "")
    text = header + "\n" + json.dumps(entry_as_dict(entry), ensure_ascii=False, indent=1)
    ranked = sorted({claim.property_id for claim in entry.claims if claim.rank == "preferred"
                     and sum(other.property_id == claim.property_id for other in entry.claims) > 1},
                    key=lambda pid: int(pid[1:]))
    if ranked:
        text += (f"\n(wdt: returns only the [preferred] values of {', '.join(ranked)}; "
                 "p:/ps: return them all)")
    return text, seen


def format_property_examples(pid: str, examples: list[PropertyExample]) -> str:
    return observe_property_examples(pid, examples)[0]


def observe_property_examples(pid: str, examples: list[PropertyExample]) -> tuple[str, Seen]:
    """A property's examples as the model reads them (``subject (ID) P… value (ID)``), and as data."""
    seen = Seen(entity=Named(pid), examples=[Example.of(example.subject, example.value) for example in examples])
    if not examples:
        return f"{pid} has no property examples (P1855).", seen
    lines = []
    for example in examples:
        line = f"{_value_text(example.subject)} {pid} {_value_text(example.value)}"
        if example.qualifiers:
            line += " " + json.dumps(_qualifiers(example.qualifiers), ensure_ascii=False)
        lines.append(line)
    return "\n".join(lines), seen


def observe_query_result(result: QueryResult) -> tuple[str, Seen]:
    """A query's observation (:func:`format_query_result`, after the line saying another engine answered, if
    one did) and, as data, an ASK's answer, a failure's reason, that line, whether the response was cut and how
    many rows arrived before a timeout (the step keeps its rows itself: :meth:`agent.trace.Step.keep_rows`)."""
    said = format_query_result(result)
    seen = Seen(boolean=result.boolean, message=result.message, fallback=result.fallback,
                truncated=result.truncated,
                arrived=len(result.bindings) if result.status == QueryStatus.TIMEOUT else None)
    return (f"{result.fallback}\n{said}" if result.fallback else said), seen


def observe_missing(entity: str, kind: str) -> tuple[str, Seen]:
    """What the model reads when no *kind* (``item``, ``property``) *entity* exists, and that as data."""
    return f"No {kind} {entity} exists.", Seen(entity=Named(entity), missing=True)


_ID = re.compile(rf"\(({ENTITY_ID})\)")


def _used(entity_id: str, later: str) -> bool:
    return re.search(rf"\b{entity_id}\b", later) is not None


def shrink_search(step: Step, later: str) -> str:
    """An old search cut to the hits whose IDs were used since (in *later* text), rendered from the hits the step
    kept (:attr:`Step.seen`); its observation as it was when every hit was used.  Hits count by a Wikidata-shaped
    ID (a graph whose IDs look otherwise keeps its searches whole)."""
    seen = step.seen or Seen()
    items = [hit for hit in seen.hits if ENTITY_ID_RE.fullmatch(hit.id)]
    properties = [hit for hit in seen.properties if ENTITY_ID_RE.fullmatch(hit.id)]
    kept = ([item_line(hit) for hit in items if _used(hit.id, later)]
            + [property_line(hit) for hit in properties if _used(hit.id, later)])
    hits = len(items) + len(properties)
    if len(kept) == hits:
        return step.observation or ""
    return "\n".join(kept + [f"({hits - len(kept)} other hits not used)"])


#: Rows an old query result keeps in the prompt.
OLD_RESULT_ROWS = 3


def shrink_result(step: Step) -> str:
    """An old query's result rendered from what the step kept: a table cut to its header, its first rows and its
    row count (a small one whole); anything else (an answer, no rows, a failure, a cut response) to its first
    line.  The note naming new IDs is not part of it (:func:`agent.grounding.naming_note`, labels only)."""
    seen = step.seen or Seen()
    status = QueryStatus(step.query_status or QueryStatus.ERROR)
    result = QueryResult(status, variables=step.variables, bindings=step.rows, boolean=seen.boolean,
                         message=seen.message, truncated=seen.truncated, shown=step.shown, fallback=seen.fallback)
    text = observe_query_result(result)[0]
    lines = text.splitlines()
    count = step.row_count if status == QueryStatus.OK else seen.arrived
    table = bool(step.rows) and seen.boolean is None and not (seen.truncated and status == QueryStatus.OK)
    if not table:
        return lines[0] if len(lines) > 1 else text
    if len(lines) <= OLD_RESULT_ROWS + 2:  # the step keeps up to ten rows: a table this small is all there
        return text
    return "\n".join(lines[:OLD_RESULT_ROWS + 1] + ["...", rows_line(count or 0)])


def shrink_entry(observation: str, later: str) -> str:
    """An old entry cut to its header and the statement lines that name an ID used since (in *later* text).

    The one shrinking that reads text: an entry the model saw is often the pruning call's JSON as the model wrote
    it (:meth:`agent.loop._Run.prune`), whose lines are the model's layout, which no data the step keeps holds."""
    header, _, body = observation.partition("\n")
    lines = [line for line in body.splitlines() if _ID.search(line)]
    kept = [line.strip() for line in lines if any(re.search(rf"\b{found}\b", later)
                                                  for found in _ID.findall(line))]
    if len(kept) == len(lines):
        return observation
    return "\n".join([header, *kept, f"({len(lines) - len(kept)} other statements not used)"])


#: What :func:`cut_entry` keeps: values per property, and characters in all.
CUT_VALUES = 5
CUT_CHARS = 4000


def cut_entry(body: str) -> str:
    """An entry's JSON cut without a model: properties by ID, long value lists shortened, a size cap."""
    try:
        edges = json.loads(body)
    except ValueError:
        return body[:CUT_CHARS]
    if not isinstance(edges, dict):
        return body[:CUT_CHARS]

    def property_number(key: str) -> int:
        match = re.search(rf"\(({PROPERTY_ID})\)$", key)
        return int(match.group(1)[1:]) if match else 0

    cut: dict[str, Any] = {}
    for key in sorted(edges, key=property_number):
        value = edges[key]
        if isinstance(value, list) and len(value) > CUT_VALUES:
            value = value[:CUT_VALUES] + [f"… {len(edges[key]) - CUT_VALUES} more"]
        cut[key] = value
    text = json.dumps(cut, ensure_ascii=False, indent=1)
    if len(text) > CUT_CHARS:
        text = text[:CUT_CHARS] + "\n… (cut: ask a query for the rest)"
    return text


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def strip_fences(text: str) -> str:
    """Drop a Markdown code fence around a model's JSON answer."""
    return _FENCE.sub("", text.strip())
