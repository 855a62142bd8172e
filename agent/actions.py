"""The five actions, each one self-contained spec: schema, argument check, executor.

One definition serves every reader: the loop checks and runs an action
through its spec, the policy prompt and the tool schemas describe it from
the same fields, and the harness report and the bot's trace name it by the
same ``name``.  A bad argument is the model's mistake, so it yields a message
the model reads next turn, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from agent import observations
from agent.graph import WIKIDATA, GraphProfile
from agent.kb.base import KnowledgeBase, QueryResult
from agent.kb.http import well_formed
from agent.trace import Seen


@dataclass(frozen=True)
class Parameter:
    name: str
    #: Sent in the tool schema when not empty; the policy prompt explains the rest.
    description: str
    #: The JSON-schema type: ``string``, or ``boolean`` for a flag.
    kind: str = "string"
    required: bool = True


@dataclass
class Outcome:
    """What running an action gave: the observation, what it showed as data (kept on the step for readers other
    than the model), and the query result for ``execute_sparql``."""

    observation: str
    seen: Seen
    result: QueryResult | None = None
    #: The observation is an entry the loop may prune to what the question needs.
    prunable: bool = False

    def __post_init__(self) -> None:
        # What a service answers may hold a lone surrogate (valid JSON, not UTF-8): the step is stored and posted.
        self.seen = Seen.from_dict(_well_formed(asdict(self.seen)))


def _well_formed(value: Any) -> Any:
    """*value* (text, or lists and dicts of it) with each lone surrogate replaced (:func:`well_formed`)."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, list):
        return [_well_formed(item) for item in value]
    if isinstance(value, dict):
        return {key: _well_formed(item) for key, item in value.items()}
    return value


#: The flag of ``stop`` that ends a run saying the question cannot be answered from the graph (GRASP's "cancel").
CANNOT_ANSWER = "cannot_answer"


def _wikidata(graph: GraphProfile | str) -> bool:
    """*graph* (a profile or its name) is Wikidata, whose tools keep their names (the upstream replay needs them)."""
    return (graph if isinstance(graph, str) else graph.name) == WIKIDATA.name


def _as_is(argument: str, graph: GraphProfile) -> tuple[str, str | None]:
    return argument, None


@dataclass(frozen=True)
class ActionSpec:
    name: str
    #: One line, listed in the policy prompt (the tool schema leaves it out: the policy is the one
    #: place that explains the actions, so a prompt does not carry it twice).
    description: str
    #: The argument the trace records; ``None`` for ``stop``.
    argument: Parameter | None
    #: Further arguments kept out of the trace's ``argument`` (``stop``'s explanation, language, flag).
    extras: tuple[Parameter, ...] = ()
    #: The normalised argument, and a message for the model when it is unusable (IDs as the graph writes them).
    check: Callable[[str, GraphProfile], tuple[str, str | None]] = _as_is
    #: Runs the checked argument; ``None`` for ``stop``, which the loop itself handles.
    execute: Callable[[KnowledgeBase, str, float | None], Outcome] | None = None
    #: The tool takes the step's ``thought`` (``stop`` does not: its explanation says it all).
    thought: bool = True
    #: The name the model sees on a graph other than Wikidata, where a name saying "wikidata" would mislead;
    #: "" where the name says no graph.  Traces and the replay keep :attr:`name`.
    other_graphs: str = ""
    #: The argument's name on a graph other than Wikidata (``entity`` for ``qid``); "" to keep it.
    other_argument: str = ""

    def name_on(self, graph: GraphProfile | str) -> str:
        """The name the model and a reader see for the action on *graph* (a profile, or a graph's name)."""
        return self.other_graphs if self.other_graphs and not _wikidata(graph) else self.name

    def on(self, graph: GraphProfile | str) -> ActionSpec:
        """The action as the model sees it on *graph*: its name and its argument's name there."""
        if _wikidata(graph):
            return self
        argument = self.argument
        if argument is not None and self.other_argument:
            argument = replace(argument, name=self.other_argument)
        return replace(self, name=self.name_on(graph), argument=argument)

    def given(self, arguments: dict[str, object], graph: GraphProfile | str) -> object | None:
        """The argument a call gave, by its name on *graph* or the Wikidata name any model may know; ``None``
        when it gave neither."""
        names = dict.fromkeys((self.on(graph).argument.name, self.argument.name)) if self.argument else {}
        return next((arguments[name] for name in names if name in arguments), None)

    @property
    def signature(self) -> str:
        """``search_wikidata(query)``: how the policy prompt writes the action."""
        return f"{self.name}({self.argument.name if self.argument else ''})"

    def schema(self) -> dict:
        """The action as an OpenAI tool (names and parameters), with the step's ``thought`` first where it takes one."""
        properties: dict[str, dict[str, str]] = {"thought": {"type": "string"}} if self.thought else {}
        required = ["thought"] if self.thought else []
        for parameter in ((self.argument,) if self.argument else ()) + self.extras:
            properties[parameter.name] = {"type": parameter.kind}
            if parameter.description:
                properties[parameter.name]["description"] = parameter.description
            if parameter.required:
                required.append(parameter.name)
        return {"type": "function", "function": {
            "name": self.name, "parameters": {"type": "object", "properties": properties, "required": required}}}


#: The longest search text: Wikibase labels and aliases, all a search matches, are at most 250 characters.
MAX_SEARCH_CHARS = 250


def _check_search(argument: str, graph: GraphProfile) -> tuple[str, str | None]:
    """A text longer than any label is the model's mistake (the Action API answers a 1 MB one with HTTP 414)."""
    if len(argument) > MAX_SEARCH_CHARS:  # cut, so the history the next prompts carry stays small
        return argument[:MAX_SEARCH_CHARS] + "…", (
            f"{ACTIONS['search_wikidata'].name_on(graph)} looks up labels and aliases, which are at most "
            f"{MAX_SEARCH_CHARS} characters; this text has {len(argument):,}. Search for a name or a short phrase.")
    return argument, None


def _check_item(argument: str, graph: GraphProfile) -> tuple[str, str | None]:
    return graph.check_item(argument)


def _check_property(argument: str, graph: GraphProfile) -> tuple[str, str | None]:
    return graph.check_property(argument)


def _search(kb: KnowledgeBase, text: str, timeout: float | None) -> Outcome:
    return Outcome(*observations.observe_search(kb.search(text)))


def _entry(kb: KnowledgeBase, qid: str, timeout: float | None) -> Outcome:
    entry = kb.get_entry(qid)
    if entry is None:
        return Outcome(*observations.observe_missing(qid, "item"))
    return Outcome(*observations.observe_entry(entry), prunable=True)


def _examples(kb: KnowledgeBase, pid: str, timeout: float | None) -> Outcome:
    examples = kb.property_examples(pid)
    if examples is None:
        return Outcome(*observations.observe_missing(pid, "property"))
    return Outcome(*observations.observe_property_examples(pid, examples))


def _query(kb: KnowledgeBase, sparql: str, timeout: float | None) -> Outcome:
    result = kb.execute(sparql, timeout=timeout)
    return Outcome(*observations.observe_query_result(result), result=result)


ACTIONS: dict[str, ActionSpec] = {
    spec.name: spec
    for spec in (
        ActionSpec("search_wikidata", "items and properties by label", Parameter("query", ""),
                   check=_check_search, execute=_search, other_graphs="search_graph"),
        ActionSpec("get_wikidata_entry", "an item's statements", Parameter("qid", ""),
                   check=_check_item, execute=_entry, other_graphs="get_entry", other_argument="entity"),
        ActionSpec("get_property_examples", "how a property is used", Parameter("pid", ""),
                   check=_check_property, execute=_examples, other_argument="property"),
        ActionSpec("execute_sparql", "run a query", Parameter("sparql", ""), execute=_query),
        ActionSpec("stop", "finish on the last query, with your explanation and the asker's language code; "
                   "with cannot_answer when the graph cannot answer the question", None,
                   extras=(Parameter("explanation", ""), Parameter("language", ""),
                           Parameter(CANNOT_ANSWER, "", kind="boolean", required=False)), thought=False),
    )
}


def actions_for(graph: GraphProfile | str = WIKIDATA) -> list[ActionSpec]:
    """The actions as the model sees them on *graph*, a profile or a graph's name: the one definition of a
    graph's tool names and argument names (``search_graph``, ``get_entry(entity)`` off Wikidata), which the
    prompt, the tool schemas, the loop, the reports and the chat page read."""
    return [spec.on(graph) for spec in ACTIONS.values()]


def shown_name(action: str, graph: GraphProfile | str = WIKIDATA) -> str:
    """*action*, as a trace records it, by the name the model knows it by on *graph* (``search_graph`` off
    Wikidata); a name no action has (a malformed call's) as it is."""
    spec = ACTIONS.get(action)
    return spec.name_on(graph) if spec else action


def shown_names(graph: GraphProfile | str = WIKIDATA) -> dict[str, str]:
    """Each action's name as traces record it, to its name on *graph* (how a report or a page shows it)."""
    return {spec.name: spec.name_on(graph) for spec in ACTIONS.values()}


def tool_schemas(graph: GraphProfile = WIKIDATA) -> list[dict]:
    return [spec.schema() for spec in actions_for(graph)]


def action_named(name: str, graph: GraphProfile = WIKIDATA) -> str:
    """The action a model's *name* calls on *graph*: its name there, or the Wikidata name any model may know;
    other names are returned as they are (and refused as unknown)."""
    return next((spec.name for spec in ACTIONS.values() if name == spec.name_on(graph)), name)


def check_argument(action: str, argument: str, graph: GraphProfile = WIKIDATA) -> tuple[str, str | None]:
    """The normalised argument, and a message for the model when it is unusable (IDs as *graph* shapes them)."""
    spec = ACTIONS.get(action)
    if spec is None:
        names = ", ".join(spec.name_on(graph) for spec in ACTIONS.values())
        return argument, f"Unknown action {action!r}. Choose one of: {names}."
    if spec.argument is None:
        return "", None
    argument = argument.strip()
    if not argument:
        return argument, f"{spec.name_on(graph)} needs an argument; it was empty."
    return spec.check(argument, graph)


def is_set(flag: object) -> bool:
    """A flag as a model may give it: ``true`` in JSON, or the words ``true``/``yes`` in text."""
    return flag is True or str(flag).strip().lower() in ("true", "yes")


def same_action(name_a: str, argument_a: str, name_b: str, argument_b: str) -> bool:
    """Two actions are the same when their names match and arguments differ only in white space."""
    return name_a == name_b and " ".join(argument_a.split()) == " ".join(argument_b.split())
