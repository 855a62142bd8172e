"""The record of one agent run.

One record serves three readers: the next LLM call (the history in the
prompt), the bot (the collapsed trace in its reply and its SQLite state) and
the evaluation harness (stored traces, costs, action counts).  Everything
here round-trips through JSON with :meth:`AgentResult.to_dict` and
:meth:`AgentResult.from_dict`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agent.kb.base import Binding

#: Why a run ended.
STOP_REASONS: dict[str, str] = {
    "stop": "the agent stopped on a query that returned results",
    "path_limit": "the final path reached its action limit",
    "action_limit": "the total number of actions reached its limit",
    "llm_error": "the language model could not be reached",
    "kb_error": "the knowledge base could not be reached",
}


@dataclass
class Step:
    """One thought, one action and what the knowledge base answered.

    ``observation`` is the text the model saw.  ``rolled_back`` marks steps
    the agent later discarded (a repeated action, a ``stop`` without a usable
    query); they stay in the record but leave the prompt.  For
    ``execute_sparql`` steps, ``query_status`` and ``row_count`` keep the
    outcome in a form code can read without parsing the observation.
    """

    thought: str
    action: str
    argument: str
    observation: str | None = None
    rolled_back: bool = False
    query_status: str | None = None
    row_count: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        return cls(**data)


@dataclass
class Usage:
    """What a run cost."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    kb_calls: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        return cls(**data)


@dataclass
class AgentResult:
    """What :meth:`agent.Agent.run` returns.

    ``answer`` holds the final query's SPARQL JSON rows, or a boolean for an
    ASK query, or ``None`` when there is no final query.
    """

    question: str
    final_sparql: str | None
    answer: list[Binding] | bool | None
    variables: list[str]
    steps: list[Step]
    stop_reason: str
    stop_message: str = ""
    usage: Usage = field(default_factory=Usage)

    @property
    def path(self) -> list[Step]:
        """The steps that were not rolled back, in order."""
        return [step for step in self.steps if not step.rolled_back]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["steps"] = [step.to_dict() for step in self.steps]
        data["usage"] = self.usage.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentResult:
        fields = dict(data)
        fields["steps"] = [Step.from_dict(step) for step in fields["steps"]]
        fields["usage"] = Usage.from_dict(fields["usage"])
        return cls(**fields)
