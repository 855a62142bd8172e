"""Name the properties the examples use, from the knowledge base itself.

The retriever finds the properties a question names by their labels and
aliases (:mod:`agent.examples.retrieval`).  Those names are read with one
SPARQL query per batch of properties, so any knowledge base the agent can
use will do: live Wikidata's query service, or a local store loaded with the
property list (labels and aliases as ``rdfs:label`` and ``skos:altLabel``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from agent.examples.store import ExampleStore
from agent.kb.base import KBUnavailable, KnowledgeBase

log = logging.getLogger(__name__)
#: Properties named per query.
BATCH = 200
#: The languages whose labels and aliases are read: those the forum's questions are mostly written in.
LANGUAGES = ("en", "de", "fr", "es")


@dataclass
class NamingReport:
    looked_up: int = 0
    names: int = 0
    #: Batches the knowledge base could not answer, with its message; they are looked up again next time.
    failed: list[str] = field(default_factory=list)


def names_query(pids: list[str], languages: tuple[str, ...] = LANGUAGES) -> str:
    values = " ".join(f"wd:{pid}" for pid in pids)
    wanted = ", ".join(f'"{language}"' for language in languages)
    return ("SELECT ?property ?name ?label WHERE { VALUES ?property { " + values + " } "
            "{ ?property rdfs:label ?name BIND(true AS ?label) } UNION { ?property skos:altLabel ?name } "
            f"FILTER(LANG(?name) IN ({wanted})) }}")


def name_properties(store: ExampleStore, kb: KnowledgeBase, languages: tuple[str, ...] = LANGUAGES) -> NamingReport:
    """Look up the names of the properties the store's examples use that were not looked up yet, and the label
    of each in the first of *languages* that has one (the reply's "earlier request" line names them)."""
    report = NamingReport()
    pending = store.unnamed_properties()
    for start in range(0, len(pending), BATCH):
        batch = pending[start:start + BATCH]
        try:
            result = kb.execute(names_query(batch, languages))
        except KBUnavailable as error:
            report.failed.append(f"{batch[0]}…{batch[-1]}: {error}")
            continue
        if not result.status.ran:
            report.failed.append(f"{batch[0]}…{batch[-1]}: {result.status} {result.message[:200]}")
            continue
        names: dict[str, list[str]] = {}
        labels: dict[str, dict[str, str]] = {}
        for row in result.bindings:
            pid = row.get("property", {}).get("value", "").rsplit("/", 1)[-1]
            name = " ".join(row.get("name", {}).get("value", "").split())
            if pid in batch and name:
                names.setdefault(pid, []).append(name)
                if "label" in row:
                    labels.setdefault(pid, {})[row["name"].get("xml:lang", "")] = name
        store.add_property_names(batch, names, {pid: next(found[language] for language in (*languages, *found)
                                                          if language in found) for pid, found in labels.items()})
        report.looked_up += len(batch)
        report.names += sum(len(found) for found in names.values())
    for failure in report.failed:
        log.warning("property names not read (they are looked up again next time): %s", failure)
    return report
