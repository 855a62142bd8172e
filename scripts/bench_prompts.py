"""What the model reads per question: our prompts against upstream's, on the same recorded runs.

    python -m scripts.bench_prompts TRACES --outputs OUTPUTS --upstream-prompts DIR

TRACES and OUTPUTS are upstream's QALD-10 run log and scored outputs (as for
``scripts.replay_upstream``); DIR holds upstream's own prompt templates
(``controller.prompt``, ``format_actions.prompt``,
``extract_final_sparql.prompt`` from the SPINACH repository's
``spinach_agent/prompts``).  Ours are the requests our agent sends while it
replays each run.  Upstream's are rebuilt from its templates the way its code
fills them: per step, one controller prompt (the instructions, the question,
the last 10 actions with the observations of old searches and entries left
out) and one formatting prompt that turns the controller's text into JSON;
an extraction prompt when the run ended without a final query.  Pruning
calls are left out on both sides: the traces hold only pruned entries.

Characters are those of the text sent (message contents, tool calls and tool
schemas).  Retention asks whether the compression drops what the model goes
on to use: for every step of every run, the IDs the real model used in that
step's action that upstream's controller prompt showed at that step, and how
many of them our prompt for the same step still shows.  "Uncached" is what a prefix cache cannot serve: the characters
after the longest prefix shared with an earlier call of the same run, a
prefix counting only from 4,096 characters (about 1,024 tokens, the
providers' minimum).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from agent.grounding import shown_ids
from agent.loop import AgentConfig
from harness.replay import replay

#: The shortest prefix a provider caches, in characters (1,024 tokens of about 4 characters).
MIN_CACHED_PREFIX = 4096
#: Upstream shows the last 10 actions, the observations of searches and entries only for the last 2.
UPSTREAM_WINDOW = 10
UPSTREAM_RECENT = 2


@dataclass
class Cost:
    """One question's prompts: characters in all, characters no cache serves, calls."""

    chars: int = 0
    uncached: int = 0
    calls: int = 0
    #: Per step, the text of the prompt that asked for the model's action (retention reads it).
    steps: list[str] = field(default_factory=list)

    def add(self, prompt: str, earlier: list[str]) -> None:
        shared = max((_common_prefix(prompt, before) for before in earlier), default=0)
        self.chars += len(prompt)
        self.uncached += len(prompt) - (shared if shared >= MIN_CACHED_PREFIX else 0)
        self.calls += 1
        earlier.append(prompt)


def _common_prefix(first: str, second: str) -> int:
    limit = min(len(first), len(second))
    index = 0
    while index < limit and first[index] == second[index]:
        index += 1
    return index


def request_text(body: dict[str, Any]) -> str:
    """A chat request as the text the model reads: tool schemas first (as providers cache them), then messages."""
    parts = [json.dumps(body["tools"], ensure_ascii=False)] if body.get("tools") else []
    for message in body["messages"]:
        parts.append(message.get("content") or "")
        for call in message.get("tool_calls") or []:
            parts.append(call["function"]["name"] + call["function"]["arguments"])
    return "".join(parts)


def our_cost(run: dict[str, Any], output: dict[str, Any]) -> Cost:
    sent: list[dict[str, Any]] = []
    replay(run, output, AgentConfig(prune_threshold=10**9), sent)
    cost, earlier = Cost(), []
    for body in sent:
        text = request_text(body)
        cost.add(text, earlier)
        if body.get("tools") or body.get("stop"):  # a step's request (tools, or the text protocol's stop)
            cost.steps.append(text)
    return cost


def _sections(template: str) -> str:
    """The parts of an upstream prompt file that are sent: all but its ``# distillation instruction``."""
    kept, keep = [], True
    for line in template.splitlines(keepends=True):
        if line.startswith("# "):
            keep = line.strip() != "# distillation instruction"
            continue
        if keep:
            kept.append(line)
    return "".join(kept)


def _action_text(action: dict[str, Any], observation: bool) -> str:
    text = f"Thought: {action.get('thought') or ''}\nAction: {action['action_name']}({action['action_argument']})\n"
    if observation:
        text += f"Observation: {action.get('observation') or 'Did not find any results.'}\n"
    return text


def _history(actions: list[dict[str, Any]]) -> list[str]:
    shown = actions[-UPSTREAM_WINDOW:]
    return [_action_text(action, not (action["action_name"] == "stop" or (
        index < len(shown) - UPSTREAM_RECENT and action["action_name"] in ("get_wikidata_entry", "search_wikidata"))))
        for index, action in enumerate(shown)]


def upstream_cost(run: dict[str, Any], templates: dict[str, jinja2.Template]) -> Cost:
    actions = list(run.get("actions") or [])
    cost, controller_calls, format_calls = Cost(), [], []
    for index, action in enumerate(actions):
        controller = templates["controller"].render(conversation_history=[], question=run["question"],
                                                    action_history=_history(actions[:index]))
        cost.add(controller, controller_calls)
        cost.steps.append(controller)
        cost.add(templates["format_actions"].render(input=_action_text(action, False)), format_calls)
    if not run.get("final_sparql"):
        trace = "".join(_action_text(action, True) for action in actions)
        cost.add(templates["extract_final_sparql"].render(question=run["question"], trace=trace), [])
    return cost


def load_templates(directory: Path) -> dict[str, jinja2.Template]:
    environment = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    templates = {}
    for name in ("controller", "format_actions", "extract_final_sparql"):
        path = directory / f"{name}.prompt"
        try:
            templates[name] = environment.from_string(_sections(path.read_text()))
        except OSError as error:
            raise SystemExit(f"error: cannot read upstream's prompt {path}: {error}") from error
    return templates


@dataclass
class Retention:
    """IDs the real model used that upstream's prompt showed at that step, and how many of them ours showed.

    With *new_only*, only IDs the model had not used in an earlier action of
    the run count: those it picked up from what it was shown, the ones a
    compression can lose (an ID of its own earlier query stays in both prompts).
    """

    new_only: bool = False
    shown_upstream: int = 0
    kept: int = 0
    #: (question, step number, ID) of each one our prompt no longer showed.
    lost: list[tuple[str, int, str]] = field(default_factory=list)

    def add(self, question: str, actions: list[dict[str, Any]], ours: list[str], upstream: list[str]) -> None:
        earlier: set[str] = set()
        for number, (action, our_prompt, their_prompt) in enumerate(zip(actions, ours, upstream), start=1):
            used = shown_ids([action["action_argument"] or ""])
            counted, earlier = (used - earlier if self.new_only else used), earlier | used
            for entity_id in sorted(counted & shown_ids([their_prompt])):
                self.shown_upstream += 1
                if entity_id in shown_ids([our_prompt]):
                    self.kept += 1
                else:
                    self.lost.append((question, number, entity_id))

    @property
    def share(self) -> float:
        return self.kept / self.shown_upstream if self.shown_upstream else 1.0


def _row(name: str, costs: list[Cost]) -> str:
    chars = [cost.chars for cost in costs]
    uncached = [cost.uncached for cost in costs]
    calls = [cost.calls for cost in costs]
    return (f"{name:<20} {statistics.median(chars):>10,.0f} {statistics.mean(chars):>10,.0f} "
            f"{statistics.median(uncached):>10,.0f} {statistics.mean(uncached):>10,.0f} "
            f"{statistics.median(calls):>7.1f} {statistics.mean(calls):>7.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path, help="upstream's run log (JSON list)")
    parser.add_argument("--outputs", type=Path, required=True, help="upstream's scored outputs (JSON list)")
    parser.add_argument("--upstream-prompts", type=Path, required=True, metavar="DIR",
                        help="upstream's spinach_agent/prompts directory")
    parser.add_argument("--show-lost", type=int, default=0, metavar="N",
                        help="list N of the IDs our prompt no longer showed (question, step, ID)")
    args = parser.parse_args(argv)
    templates = load_templates(args.upstream_prompts)
    try:
        runs = json.loads(args.traces.read_text())
        outputs = json.loads(args.outputs.read_text())
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    ours = [our_cost(run, output) for run, output in zip(runs, outputs)]
    upstream = [upstream_cost(run, templates) for run in runs]
    print(f"{len(runs)} questions; characters of prompt text per question")
    print(f"{'':<20} {'median':>10} {'mean':>10} {'uncached':>10} {'uncached':>10} {'calls':>7} {'calls':>7}")
    print(f"{'':<20} {'':>10} {'':>10} {'median':>10} {'mean':>10} {'median':>7} {'mean':>7}")
    print(_row("ours", ours))
    print(_row("upstream (rebuilt)", upstream))
    ratio = [statistics.median([c.chars for c in ours]) / statistics.median([c.chars for c in upstream]),
             statistics.mean([c.chars for c in ours]) / statistics.mean([c.chars for c in upstream]),
             statistics.median([c.uncached for c in ours]) / statistics.median([c.uncached for c in upstream]),
             statistics.mean([c.uncached for c in ours]) / statistics.mean([c.uncached for c in upstream])]
    print(f"{'ours / upstream':<20} " + " ".join(f"{value:>10.1%}" for value in ratio))
    per_question = [our.chars / their.chars for our, their in zip(ours, upstream) if their.chars]
    print(f"ours / upstream per question: median {statistics.median(per_question):.1%}, "
          f"mean {statistics.mean(per_question):.1%}")
    retention, new = Retention(), Retention(new_only=True)
    for run, our, their in zip(runs, ours, upstream):
        for measure in (retention, new):
            measure.add(run["question"], list(run.get("actions") or []), our.steps, their.steps)
    for measure, what in ((retention, "IDs the real model used"), (new, "IDs the real model used for the first time")):
        print(f"retention: of {measure.shown_upstream:,} {what} that upstream's prompt showed at that step, ours "
              f"showed {measure.kept:,} ({measure.share:.1%}); {len(measure.lost)} gone, in "
              f"{len({question for question, _, _ in measure.lost})} runs")
    for question, number, entity_id in retention.lost[:args.show_lost]:
        print(f"  step {number:>2} {entity_id:<10} {question}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
