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
schemas).  "Uncached" is what a prefix cache cannot serve: the characters
after the longest prefix shared with an earlier call of the same run, a
prefix counting only from 4,096 characters (about 1,024 tokens, the
providers' minimum).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

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
        cost.add(request_text(body), earlier)
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
        cost.add(templates["controller"].render(conversation_history=[], question=run["question"],
                                                action_history=_history(actions[:index])), controller_calls)
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
