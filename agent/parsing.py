"""Read a plain-text step, for endpoints without function calling.

The model answers ``Thought: ...`` then ``Action: name(argument)``
(``stop`` preceded by ``Explanation: ...`` and ``Language: ...`` lines, and
``Cannot answer: yes`` when Wikidata cannot answer the question).  Real
models wrap SPARQL in many ways - over several lines, in triple quotes, in
backticks or a fenced ```sparql block, with or without the parentheses - and
all of them must give back the query exactly as written inside the wrapper.
Models also run on and invent the observation; the argument therefore ends at
the parenthesis that balances the opening one (strings, IRIs and fences
skipped, by the one SPARQL lexer), and anything from ``Observation:`` on is
never read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.sparql_lexer import tokenize

_ACTION = re.compile(r"^\s*Action\s*:\s*", re.IGNORECASE | re.MULTILINE)
_THOUGHT = re.compile(r"^\s*Thought\s*:\s*", re.IGNORECASE | re.MULTILINE)
_NAME = re.compile(r"`?([A-Za-z_][A-Za-z0-9_]*)`?\s*")
_FENCE = re.compile(r"^```[A-Za-z]*[ \t]*\n?(.*?)\n?[ \t]*```$", re.DOTALL)
_OBSERVATION = re.compile(r"^\s*Observation\s*:", re.IGNORECASE | re.MULTILINE)
#: Lines a ``stop`` carries before its action, as ``Name: value``.
_EXTRAS = re.compile(r"^\s*(Explanation|Language|Cannot answer)\s*:\s*", re.IGNORECASE | re.MULTILINE)


class ParseError(ValueError):
    """The reply holds no readable action; the message tells the model what to write."""


@dataclass
class ParsedStep:
    thought: str
    action: str
    argument: str
    #: ``explanation``, ``language`` and ``cannot_answer`` when the reply gave them.
    extras: dict[str, str] = field(default_factory=dict)


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


def _closing(body: str) -> int:
    """Where the parenthesis balancing an opening one (just before *body*) is, or -1."""
    stripped = body.lstrip()
    offset = len(body) - len(stripped)
    if stripped.startswith("```"):
        end = stripped.find("```", 3)
        if end == -1:
            return -1
        after = stripped.find(")", end + 3)
        return -1 if after == -1 else offset + after
    depth = 1
    for token in tokenize(body):
        if token.kind == "punct" and token.text == "(":
            depth += 1
        elif token.kind == "punct" and token.text == ")":
            depth -= 1
            if depth == 0:
                return token.start
    return -1


def _split_head(head: str) -> tuple[str, dict[str, str]]:
    """The thought and the ``Explanation:``/``Language:``/``Cannot answer:`` values written before the action."""
    markers = list(_EXTRAS.finditer(head))
    thought_part = head[: markers[0].start()] if markers else head
    thought_match = _THOUGHT.search(thought_part)
    thought = (thought_part[thought_match.end():] if thought_match else thought_part).strip()
    extras = {}
    for index, marker in enumerate(markers):
        end = markers[index + 1].start() if index + 1 < len(markers) else len(head)
        extras[marker.group(1).lower().replace(" ", "_")] = head[marker.end():end].strip()
    return thought, extras


def parse_step(text: str) -> ParsedStep:
    """Split a reply into thought, action name, argument and the extras of ``stop``."""
    observation = _OBSERVATION.search(text)
    if observation:
        text = text[: observation.start()]
    actions = list(_ACTION.finditer(text))
    if not actions:
        raise ParseError("No action found. End your reply with a line 'Action: name(argument)'.")
    action_start = actions[0]
    thought, extras = _split_head(text[: action_start.start()])
    rest = text[action_start.end():].strip()
    name_match = _NAME.match(rest)
    if not name_match:
        raise ParseError("The action has no name. Write 'Action: name(argument)'.")
    name = name_match.group(1)
    rest = rest[name_match.end():]
    if rest.startswith("("):
        body = rest[1:]
        closing = _closing(body)
        if closing == -1:
            closing = body.rstrip().rfind(")")
        if closing == -1:
            raise ParseError(f"The argument of {name} is not closed with ')'.")
        argument = body[:closing]
    else:
        argument = rest
    return ParsedStep(thought=thought, action=name, argument=_unwrap(argument), extras=extras)
