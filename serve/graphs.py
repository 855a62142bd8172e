"""The graphs a server answers about: each a name, a knowledge base with its profile, and the dataset IRIs that
pick it in the TEXT2SPARQL API."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.graph import WIKIDATA, GraphProfile
from agent.kb import open_kb
from agent.kb.base import KnowledgeBase
from agent.redact import Scrubbed

#: The source that names live Wikidata (its Action API and query service, or those the environment names).
LIVE = "live"


class GraphSpecError(ValueError):
    """A ``--graph`` or ``--dataset`` argument that cannot be used; the message says which and why."""


@dataclass
class ServedGraph:
    """One graph the server answers about."""

    name: str
    kb: KnowledgeBase = field(repr=False)
    #: TEXT2SPARQL dataset IRIs that select this graph.
    datasets: list[str] = field(default_factory=list)
    #: A local store (its queries run in a worker process of their own), not a remote service.
    local: bool = False

    def warm_up(self) -> None:
        """Start a local store's query worker now: it starts on the first query, which would make the first asker
        wait about a second longer than the next ones.  A remote service is left alone."""
        if self.local:
            self.kb.execute("ASK {}")

    @property
    def profile(self) -> GraphProfile:
        """The graph's profile, as its knowledge base holds it."""
        return self.kb.graph

    @property
    def title(self) -> str:
        return self.profile.title

    @property
    def links_to_query_service(self) -> bool:
        """Whether a final query gets a Try-it link: Wikidata's query service opens any query by its URL."""
        return self.profile.name == WIKIDATA.name


def split_spec(text: str, option: str) -> tuple[str, str]:
    """``NAME=SOURCE`` (``--graph``) or ``IRI=NAME`` (``--dataset``), both parts non-empty; the name holds no ``=``,
    a path or an IRI may."""
    left, equals, right = text.partition("=") if option == "--graph" else text.rpartition("=")
    if not equals or not left.strip() or not right.strip():
        raise GraphSpecError(f"{option} {text!r}: write it as {'NAME=SOURCE' if option == '--graph' else 'IRI=NAME'}")
    return left.strip(), right.strip()


def open_graph(name: str, source: str) -> ServedGraph:
    """*source* ``live`` for live Wikidata, else the directory of a local store (opened read-only: a bot or a load
    may hold it); every answer of its knowledge base is masked of secrets (a query service may echo its
    credentials)."""
    if source == LIVE:
        return ServedGraph(name, Scrubbed(open_kb()))
    from agent.kb.local import LocalKB

    if not Path(source).is_dir():
        raise GraphSpecError(f"--graph {name}={source}: no store in {source} (build one with "
                             f"`python -m agent.kb load --store {source} FILE...`, or write {LIVE} for Wikidata)")
    return ServedGraph(name, Scrubbed(LocalKB(source, read_only=True)), local=True)


def open_graphs(graph_specs: list[str], dataset_specs: list[str]) -> dict[str, ServedGraph]:
    """The graphs of ``--graph NAME=SOURCE`` arguments (live Wikidata alone when none is given), with the dataset
    IRIs of ``--dataset IRI=NAME`` arguments attached."""
    graphs: dict[str, ServedGraph] = {}
    for spec in graph_specs or [f"wikidata={LIVE}"]:
        name, source = split_spec(spec, "--graph")
        if name in graphs:
            raise GraphSpecError(f"--graph {name}: named twice")
        graphs[name] = open_graph(name, source)
    seen: set[str] = set()
    for spec in dataset_specs:
        iri, name = split_spec(spec, "--dataset")
        if name not in graphs:
            raise GraphSpecError(f"--dataset {spec}: no graph named {name!r} (served: {', '.join(graphs)})")
        if iri in seen:
            raise GraphSpecError(f"--dataset {iri}: given twice")
        seen.add(iri)
        graphs[name].datasets.append(iri)
    return graphs
