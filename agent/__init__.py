"""The SPINACH agent: an LLM that explores Wikidata like an expert and ends on a SPARQL query.

>>> from agent import Agent, AgentConfig
>>> from agent.llm import ChatModel, LLMConfig
>>> from agent.kb import open_kb
>>> agent = Agent(llm=ChatModel.from_config(LLMConfig.from_env()), kb=open_kb())  # doctest: +SKIP
>>> result = agent.run("Who were the doctoral advisors of Leonhard Euler?")       # doctest: +SKIP

The names below are imported when first used, so a process that needs one submodule alone (the local store's
query worker) does not import the loop, the model client and their dependencies.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.loop import Agent, AgentConfig, AgentContext
    from agent.trace import AgentResult, Step, Usage

__all__ = ["Agent", "AgentConfig", "AgentContext", "AgentResult", "Step", "Usage"]
_MODULES = {"Agent": "agent.loop", "AgentConfig": "agent.loop", "AgentContext": "agent.loop",
            "AgentResult": "agent.trace", "Step": "agent.trace", "Usage": "agent.trace"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(import_module(_MODULES[name]), name)
    raise AttributeError(f"module 'agent' has no attribute {name!r}")
