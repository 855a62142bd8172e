"""What decides a run's results, part by part, as short digests kept in ``run.json``.

A name says little: two files both called ``questions.yml`` may hold other
questions under the same ids, a store under the same path may have lost
triples, a profile's prompt rules may have gained a line.  So each part is
recorded by its content:

=========  =====================================================================================
part       what its digest covers
=========  =====================================================================================
questions  every question of the split or file: id, text, gold query, the file's gold answer,
           KQA Pro's answer and choices (not the file's name)
graph      a local store's triples (blank nodes' labels aside); live Wikidata's dialect only
profile    the graph's profile as its text (``graph.toml`` kept with a store)
prompts    the prompts as the model receives them on this graph: the policy with the profile's
           lines and rules (in both protocols), the tools' schemas, every template's text
model      the model asked for, its sampling and limits (not its endpoint's address)
examples   the example store's examples for this graph and how they are ranked ("none" without)
=========  =====================================================================================

Resuming a directory whose parts differ is refused, naming them
(:mod:`harness.run_info`); comparing two runs whose questions or graph
differ is refused, and other differences are said above the table
(:mod:`harness.comparison`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agent.actions import actions_for, tool_schemas
from agent.graph import GraphProfile
from agent.prompts import fingerprint as templates_fingerprint
from agent.prompts import render
from harness.datasets import Example

#: The parts of a fingerprint, in the words a refusal uses.
PARTS = {"questions": "questions (text or gold)", "graph": "graph content", "profile": "graph profile",
         "prompts": "prompts as rendered for the graph", "model": "model or its settings",
         "examples": "example store"}
#: The parts that say what was measured: two runs that differ in them are no comparison of systems.
MEASURED_PARTS = ("questions", "graph")
#: Where a store's content digest is kept, in the run's directory, with the state of the files it was read from.
GRAPH_CACHE = "graph-digest.json"
_BLANK = re.compile(r"_:[^\s>]+")


def digest(value: Any) -> str:
    """A short hash of *value* as canonical JSON."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def questions_digest(examples: list[Example]) -> str:
    """Every question's content, in order, without the dataset's or file's name (a renamed copy is the same)."""
    return digest([{key: value for key, value in asdict(example).items() if key not in ("source", "split")}
                   for example in examples])


def profile_digest(graph: GraphProfile) -> str:
    """The profile's text (Wikidata's built-in one included); its fields where it has no text."""
    return digest(graph.source or repr(graph))


def prompts_digest(graph: GraphProfile, answer_guaranteed: bool, scholarly_service: str) -> str:
    """The policy prompt rendered for *graph* in both protocols, the tools' schemas and every template's text."""
    policies = [render("policy", answer_guaranteed=answer_guaranteed, text_protocol=text,
                       actions=actions_for(graph), scholarly_service=scholarly_service, graph=graph.prompt)
                for text in (False, True)]
    return digest({"policy": policies, "tools": tool_schemas(graph), "templates": templates_fingerprint(),
                   "graph_lines": asdict(graph.prompt)})


def model_digest(settings: dict[str, Any]) -> str:
    """The model asked for and how it was sampled and bounded (from a part's settings); not where it is served
    (a server restarted on another port serves the same model) nor how long a reply may take."""
    sampling = {key: value for key, value in (settings.get("sampling") or {}).items() if key != "llm_timeout"}
    return digest({"model": settings.get("model"), "sampling": sampling, "baseline": settings.get("baseline")})


def examples_digest(store: Any, graph: str, ranking: str | None) -> str:
    """The examples *store* holds for *graph* (what may be shown) and the ranking; ``none`` without a store."""
    if store is None:
        return "none"
    shown = [(example.key, example.question, example.sparql) for example in store.examples()
             if example.graph == graph]
    return digest({"examples": shown, "names": sorted(store.property_names()), "ranking": ranking})


def _store_state(directory: Path) -> list[tuple[str, int, int]]:
    """The store's files as they are now (name, size, time): a change to the triples changes them."""
    found = []
    for path in sorted((directory / "oxigraph").glob("*")):
        if path.is_file() and not path.name.startswith("LOG"):
            status = path.stat()
            found.append((path.name, status.st_size, status.st_mtime_ns))
    return found


def store_digest(store: Any, directory: Path, cache_dir: Path, progress: bool = True) -> str:
    """The triples of the Oxigraph *store* kept in *directory*, in any order (a sum of each quad's hash; blank
    nodes' labels, new at each load, left out), read again only when the store's files have changed since
    the digest kept in *cache_dir*."""
    state = _store_state(directory)
    cache = cache_dir / GRAPH_CACHE
    try:
        kept = json.loads(cache.read_text(encoding="utf-8"))
        if kept.get("store") == str(directory.resolve()) and kept.get("state") == [list(item) for item in state]:
            return str(kept["digest"])
    except (OSError, ValueError, AttributeError):
        pass
    total, count = 0, 0
    for quad in tqdm(store.quads_for_pattern(None, None, None), desc="graph fingerprint", unit=" triples",
                     disable=not progress, unit_scale=True):
        text = str(quad)
        if "_:" in text:
            text = _BLANK.sub("_:", text)
        total = (total + int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest(), "big")) \
            % (1 << 128)
        count += 1
    value = digest([count, total])
    cache_dir.mkdir(parents=True, exist_ok=True)
    temporary = cache.with_name(GRAPH_CACHE + ".tmp")
    temporary.write_text(json.dumps({"store": str(directory.resolve()), "state": state, "digest": value}),
                         encoding="utf-8")
    os.replace(temporary, cache)
    return value


def graph_digest(kb: Any, kb_source: dict[str, str], cache_dir: Path, progress: bool = True) -> str:
    """A local store's content (:func:`store_digest`); for live Wikidata, whose content no run can pin, the
    dialect its query service speaks."""
    store, directory = getattr(kb, "store", None), getattr(kb, "directory", None)
    if store is None or directory is None:
        return digest({"live": kb_source.get("dialect")})
    return store_digest(store, Path(directory), cache_dir, progress)


def differences(before: dict[str, str] | None, after: dict[str, str] | None,
                parts: tuple[str, ...] = tuple(PARTS)) -> list[str]:
    """The *parts* whose digests differ, in words; a part either fingerprint lacks (an older run) is not
    counted."""
    before, after = before or {}, after or {}
    return [PARTS[part] for part in parts if part in before and part in after and before[part] != after[part]]
