"""Read a plain-text step, for endpoints without function calling.

The model answers ``Thought: ...`` then ``Action: name(argument)``.  Real
models wrap SPARQL in many ways - over several lines, in triple quotes, in
backticks or a fenced ```sparql block, with or without the parentheses - and
all of them must give back the query exactly as written inside the wrapper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ACTION = re.compile(r"^\s*Action\s*:\s*", re.IGNORECASE | re.MULTILINE)
_THOUGHT = re.compile(r"^\s*Thought\s*:\s*", re.IGNORECASE | re.MULTILINE)
_NAME = re.compile(r"`?([A-Za-z_][A-Za-z0-9_]*)`?\s*")
_FENCE = re.compile(r"^```[A-Za-z]*[ \t]*\n?(.*?)\n?[ \t]*```$", re.DOTALL)


class ParseError(ValueError):
    """The reply holds no readable action; the message tells the model what to write."""


@dataclass
class ParsedStep:
    thought: str
    action: str
    argument: str


def _unwrap(argument: str) -> str:
    argument = argument.strip()
    fenced = _FENCE.match(argument)
    if fenced:
        return fenced.group(1).strip()
    for quote in ('"""', "'''"):
        if len(argument) >= 6 and argument.startswith(quote) and argument.endswith(quote):
            return argument[3:-3].strip()
    if len(argument) >= 2 and argument[0] == argument[-1] and argument[0] in "\"'`":
        return argument[1:-1].strip()
    return argument


def parse_step(text: str) -> ParsedStep:
    """Split a reply into thought, action name and argument."""
    actions = list(_ACTION.finditer(text))
    if not actions:
        raise ParseError("No action found. End your reply with a line 'Action: name(argument)'.")
    action_start = actions[0]
    head = text[: action_start.start()]
    thought_match = _THOUGHT.search(head)
    thought = (head[thought_match.end():] if thought_match else head).strip()
    rest = text[action_start.end():].strip()
    name_match = _NAME.match(rest)
    if not name_match:
        raise ParseError("The action has no name. Write 'Action: name(argument)'.")
    name = name_match.group(1)
    rest = rest[name_match.end():]
    if rest.startswith("("):
        body = rest[1:].rstrip()
        closing = body.rfind(")")
        if closing == -1:
            raise ParseError(f"The argument of {name} is not closed with ')'.")
        argument = body[:closing]
    else:
        argument = rest
    return ParsedStep(thought=thought, action=name, argument=_unwrap(argument))
