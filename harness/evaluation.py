"""Run the agent (or the one-call baseline) over a dataset, resumably, and score it.

An output directory holds:

* ``run.json``: what was run (dataset, split, model, baseline or agent);
* ``gold.jsonl``: gold answers fetched by running gold queries (with when);
* ``results.jsonl``: one line per finished question: question, gold and
  predicted SPARQL and answers, F1, EM, steps, actions, stop reason, usage;
* ``traces.jsonl``: the full agent record of each finished question.

Lines are appended, flushed and synced to disk as questions finish, so an interrupted run
continues where it stopped; a question whose run failed for want of the model
or the knowledge base is not written, and is tried again next time.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from harness.datasets import Example
from agent.kb.base import KnowledgeBase
from agent.llm import ChatModel, LLMUnavailable
from harness.metrics import exact_match, row_major_f1
from agent.observations import format_query_result
from agent.prompts import render
from agent.trace import AgentResult, Step, Usage

Answerer = Callable[[Example], AgentResult]
UNFINISHED = ("llm_error", "kb_error")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a JSON-lines file (a line cut short by a crash is left out)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


class _Appender:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        with self.lock, self.path.open("a", encoding="utf-8") as output:
            output.write(json.dumps(record, ensure_ascii=False) + "\n")
            output.flush()
            os.fsync(output.fileno())


def with_gold_answers(examples: list[Example], kb: KnowledgeBase, out_dir: Path,
                      progress: bool = True) -> tuple[list[Example], int]:
    """Examples with a gold answer: the file's own, else the gold query's result (stored with its time).

    Questions whose gold query returns nothing are dropped, as the paper did; their number is returned.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    stored = {record["id"]: record for record in read_jsonl(out_dir / "gold.jsonl")}
    appender = _Appender(out_dir / "gold.jsonl")
    kept: list[Example] = []
    dropped = 0
    missing = [example for example in examples if example.gold_answer is None and example.id not in stored]
    for example in tqdm(missing, desc="gold answers", unit="query", disable=not progress or not missing):
        result = kb.execute(example.gold_sparql)
        stored[example.id] = {"id": example.id, "answer": result.answer, "status": result.status,
                              "retrieved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        appender.write(stored[example.id])
    for example in examples:
        if example.gold_answer is None:
            answer = stored[example.id]["answer"]
            if answer is None or answer == []:
                dropped += 1
                continue
            example = replace(example, gold_answer=answer)
        kept.append(example)
    return kept, dropped


def score(record: dict[str, Any]) -> dict[str, Any]:
    record["f1"] = row_major_f1(record["predicted_answer"], record["gold_answer"])
    record["em"] = exact_match(record["predicted_answer"], record["gold_answer"])
    return record


def result_record(example: Example, result: AgentResult) -> dict[str, Any]:
    return score({
        "id": example.id, "question": example.question, "source": example.source, "split": example.split,
        "gold_sparql": example.gold_sparql, "gold_answer": example.gold_answer,
        "predicted_sparql": result.final_sparql, "predicted_answer": result.answer,
        "steps": len(result.path), "actions": dict(Counter(step.action for step in result.steps)),
        "stop_reason": result.stop_reason, "usage": result.usage.to_dict(),
    })


def evaluate(examples: list[Example], answer: Answerer, out_dir: Path, workers: int = 4,
             progress: bool = True) -> list[dict[str, Any]]:
    """Answer every example not already in ``results.jsonl``; return all finished records."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / "results.jsonl"
    finished = {record["id"] for record in read_jsonl(results_path)}
    pending = [example for example in examples if example.id not in finished]
    results, traces = _Appender(results_path), _Appender(out_dir / "traces.jsonl")

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool, \
            tqdm(total=len(examples), initial=len(examples) - len(pending), desc="questions", unit="q",
                 disable=not progress) as bar:
        futures = {pool.submit(answer, example): example for example in pending}
        for future in as_completed(futures):
            example = futures[future]
            result = future.result()
            bar.update(1)
            if result.stop_reason in UNFINISHED:
                bar.write(f"{example.id}: {result.stop_reason}: {result.stop_message} (will be retried)")
                continue
            traces.write({"id": example.id, "trace": result.to_dict()})
            results.write(result_record(example, result))
    return read_jsonl(results_path)


def rescore(out_dir: Path) -> list[dict[str, Any]]:
    """Score stored predictions again (after a metric change, say): no model, no network."""
    records = [score(record) for record in read_jsonl(out_dir / "results.jsonl")]
    path = out_dir / "results.jsonl"
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), encoding="utf-8")
    return records


_FENCED = re.compile(r"```(?:sparql)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def baseline_answerer(llm: ChatModel, kb: KnowledgeBase) -> Answerer:
    """The paper's "LLM writes SPARQL directly": one call, no exploration, the query run once."""

    def answer(example: Example) -> AgentResult:
        started = time.monotonic()
        usage = Usage()
        try:
            completion = llm.complete([{"role": "user", "content": render("baseline", question=example.question)}],
                                      temperature=0.0)
        except LLMUnavailable as error:
            return AgentResult(example.question, None, None, [], [], "llm_error", str(error), usage)
        usage.llm_calls, usage.prompt_tokens = 1, completion.prompt_tokens
        usage.completion_tokens, usage.cached_tokens = completion.completion_tokens, completion.cached_tokens
        fenced = _FENCED.search(completion.content)
        sparql = (fenced.group(1) if fenced else completion.content).strip()
        result = kb.execute(sparql)
        usage.kb_calls, usage.seconds = 1, round(time.monotonic() - started, 3)
        step = Step(completion.content, "execute_sparql", sparql, format_query_result(result),
                    query_status=result.status)
        return AgentResult(example.question, sparql, result.answer, result.variables, [step], "stop",
                           "one query written directly", usage)

    return answer


def write_run_info(out_dir: Path, **info: Any) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "run.json"
    if path.exists():
        previous = json.loads(path.read_text())
        changed = {key for key in ("dataset", "split", "baseline") if previous.get(key) != info.get(key)}
        if changed:
            raise ValueError(f"{out_dir} holds a run with another {', '.join(sorted(changed))}; "
                             "use a new --out directory")
    path.write_text(json.dumps(info, indent=1))

