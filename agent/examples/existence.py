"""Which Wikidata items and properties an example's query names that Wikidata does not have.

A query naming a deleted item, or one merged into another (its ID only
redirects, so the query finds nothing), reads as well as a good one, and a
reader of the prompt would copy it.  Such an example is never stored
(:meth:`agent.examples.store.ExampleStore.add`).  The knowledge base is asked,
:data:`BATCH` IDs a query, which of them it holds: an ID is there when it has a
triple other than a redirect's ``owl:sameAs``.  Only a knowledge base that
holds the whole graph can say an ID is missing: live Wikidata, not a local
store loaded with part of it (the property list), which is not asked.  An ID
the knowledge base could not be asked about counts as present, and the failure
is kept for the report (the same :class:`Existence` asks it again).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from agent.graph import entity_order
from agent.kb.base import KBUnavailable, KnowledgeBase

#: IDs asked about per query.
BATCH = 200


def present_query(ids: list[str]) -> str:
    """Which of *ids* (``Q5``, ``P31``) the graph holds, other than as a redirect."""
    values = " ".join(f"wd:{id_}" for id_ in ids)
    return ("SELECT ?id WHERE { VALUES ?id { " + values + " } "
            "FILTER EXISTS { ?id ?property ?value FILTER(?property != owl:sameAs) } }")


@dataclass
class Existence:
    """What the knowledge base *kb* said of the IDs asked about so far, kept for the IDs asked again."""

    kb: KnowledgeBase
    #: Per ID asked about and answered: whether the graph holds it.
    known: dict[str, bool] = field(default_factory=dict)
    #: The batches that could not be asked, with the knowledge base's message.
    failed: list[str] = field(default_factory=list)

    def missing(self, ids: Iterable[str]) -> set[str]:
        """Those of *ids* the graph does not hold (asking the knowledge base about those not asked yet)."""
        wanted = set(ids)
        pending = sorted(wanted - self.known.keys(), key=entity_order)
        for start in range(0, len(pending), BATCH):
            batch = pending[start:start + BATCH]
            try:
                result = self.kb.execute(present_query(batch))
            except KBUnavailable as error:
                self.failed.append(f"{batch[0]}…{batch[-1]}: {error}")
                continue
            if not result.status.ran or result.truncated:
                self.failed.append(f"{batch[0]}…{batch[-1]}: {result.status} {result.message[:200]}")
                continue
            present = {row.get("id", {}).get("value", "").rsplit("/", 1)[-1] for row in result.bindings}
            self.known.update((id_, id_ in present) for id_ in batch)
        return {id_ for id_ in wanted if self.known.get(id_) is False}
