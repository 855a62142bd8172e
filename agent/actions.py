"""The five actions: their declared schemas and the check of each argument.

The schemas serve two protocols: they are sent as tools to endpoints with
function calling, and the same argument checks apply to actions parsed from
plain text.  A bad argument is the model's mistake, so it yields a message
the model reads next turn, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str
    #: The argument's name in the tool schema; ``None`` for ``stop``.
    parameter: str | None
    parameter_description: str = ""


ACTIONS: dict[str, ActionSpec] = {
    spec.name: spec
    for spec in (
        ActionSpec("search_wikidata", "Search Wikidata items and properties by label or alias.", "query",
                   "The text to search for, e.g. a name or a short phrase."),
        ActionSpec("get_wikidata_entry", "Read an item's outgoing statements with their qualifiers.", "qid",
                   "An item ID such as Q42."),
        ActionSpec("get_property_examples", "Read how a property is used, from its property examples.", "pid",
                   "A property ID such as P31."),
        ActionSpec("execute_sparql", "Run a SPARQL query on the Wikidata Query Service and read the result.",
                   "sparql", "The complete SPARQL query."),
        ActionSpec("stop", "Finish: the last executed query is the final answer.", None),
    )
}

_QID = re.compile(r"^(?:wd:|https?://www\.wikidata\.org/(?:entity|wiki)/)?(Q[1-9][0-9]*)$", re.IGNORECASE)
_PID = re.compile(
    r"^(?:wdt?:|https?://www\.wikidata\.org/(?:entity|wiki/Property:|prop/direct)/?)?(P[1-9][0-9]*)$",
    re.IGNORECASE,
)


def tool_schemas() -> list[dict]:
    """The actions as OpenAI tools; every tool also takes the step's ``thought``."""
    tools = []
    for spec in ACTIONS.values():
        properties = {"thought": {"type": "string", "description": "Your reasoning for this step."}}
        if spec.parameter:
            properties[spec.parameter] = {"type": "string", "description": spec.parameter_description}
        tools.append({
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": ["thought"] + ([spec.parameter] if spec.parameter else []),
                },
            },
        })
    return tools


def check_argument(action: str, argument: str) -> tuple[str, str | None]:
    """The normalised argument, and a message for the model when it is unusable."""
    if action not in ACTIONS:
        names = ", ".join(ACTIONS)
        return argument, f"Unknown action {action!r}. Choose one of: {names}."
    argument = argument.strip()
    if action == "stop":
        return "", None
    if not argument:
        return argument, f"{action} needs an argument; it was empty."
    if action == "get_wikidata_entry":
        match = _QID.match(argument)
        if not match:
            return argument, f"{argument!r} is not an item ID. Give one such as Q42 (search first if needed)."
        return match.group(1).upper(), None
    if action == "get_property_examples":
        match = _PID.match(argument)
        if not match:
            return argument, f"{argument!r} is not a property ID. Give one such as P31 (search first if needed)."
        return match.group(1).upper(), None
    return argument, None


def same_action(name_a: str, argument_a: str, name_b: str, argument_b: str) -> bool:
    """Two actions are the same when their names match and arguments differ only in white space."""
    return name_a == name_b and " ".join(argument_a.split()) == " ".join(argument_b.split())
