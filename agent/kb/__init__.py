"""Knowledge bases the agent can explore: live Wikidata, or a local Oxigraph store."""

from __future__ import annotations

from pathlib import Path

from agent.kb.base import KnowledgeBase
from agent.kb.cache import ResponseCache
from agent.kb.live import LiveWikidata, WikidataConfig


def open_kb(kb_dir: str | Path | None = None, cache_path: str | Path | None = None, offline: bool = False,
            config: WikidataConfig | None = None, read_only: bool = True) -> KnowledgeBase:
    """The local store in *kb_dir* when given, else live Wikidata (with the response cache at *cache_path*).

    A store is opened *read_only* unless asked: an agent only reads, so any
    number of agents (and a running bot) can share one store.
    """
    if kb_dir is not None:
        from agent.kb.local import LocalKB

        return LocalKB(Path(kb_dir), read_only=read_only)
    if offline and cache_path is None:
        raise ValueError("offline mode answers only from the response cache: give a cache path too")
    cache = ResponseCache(cache_path, offline=offline) if cache_path is not None else None
    return LiveWikidata(config or WikidataConfig.from_env(), cache=cache)
