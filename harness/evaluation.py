"""Run the agent (or the one-call baseline) over a dataset, resumably, and score it.

An output directory holds:

* ``run.json``: what was run, part by part (see :mod:`harness.run_info`);
* ``gold.jsonl``: gold answers fetched by running gold queries, with their
  status and retrieval time (the last line for a question wins);
* ``results.jsonl``: one line per finished question: question, gold and
  predicted SPARQL and answers, row-major F1 and EM, the stricter QALD variant's per-question
  precision/recall/F1, actions on the final path, stop reason, usage, and
  (``postprocessed``) the final query after upstream's post-processing with
  its answer and scores, a separate figure beside the agent's own;
  ``diagnosis`` says why it scored so (:mod:`harness.diagnostics`), and
  ``repeat`` which of ``--repeats`` runs of the split it belongs to;
* ``traces.jsonl``: the full agent record of each finished question;
* ``failures.jsonl``: every run that failed for want of the model or the
  knowledge base (tried again on the next run of the same command).

Lines are appended, flushed and synced to disk as questions finish, so an
interrupted run continues where it stopped.  A question's trace is written
before its result, and on resuming a trace without a result (a kill between
the two writes) is removed, so each finished question has exactly one trace;
a line cut short by a crash is cut off before anything is appended after it.
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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agent.kb.base import KBUnavailable, KnowledgeBase
from agent.llm import ChatModel, LLMUnavailable
from agent.observations import observe_query_result
from agent.prompts import render
from agent.trace import SERVICE_FAILURES, AgentResult, Step, StopReason, Usage
from harness.datasets import Dataset, Example, dataset_of_line
from harness.scoring import headline
from harness.upstream_postprocessing import postprocess

Answerer = Callable[[Example], AgentResult]
#: A question's identity across datasets: ids repeat from one dataset (or split) to another.
Key = tuple[str, str, str]
#: One answer's identity: the question's, and which repeat of the split it belongs to (1 when not repeated).
RunKey = tuple[str, str, str, int]
#: Gold statuses that are final: a usable answer, an empty one (the question is dropped), a cut one (excluded).
GOLD_FINAL = ("ok", "empty", "cut")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def question_key(record: dict[str, Any]) -> Key:
    """(dataset, split, id) of a stored line (``?`` for lines written before they carried the first two)."""
    return (record.get("source", "?"), record.get("split", "?"), str(record["id"]))


def example_key(example: Example) -> Key:
    return (example.source, example.split, example.id)


def run_key(record: dict[str, Any]) -> RunKey:
    """(dataset, split, id, repeat) of a stored line; lines written before repeats existed are repeat 1."""
    return (*question_key(record), int(record.get("repeat", 1)))


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


def _cut_partial_line(path: Path) -> None:
    """Drop a last line a crash left without its newline, so the next append starts a line of its own."""
    if not path.exists():
        return
    with path.open("rb+") as handle:
        data = handle.read()
        if data and not data.endswith(b"\n"):
            handle.truncate(data.rfind(b"\n") + 1)


def _write_lines(path: Path, records: list[dict[str, Any]]) -> None:
    """Replace *path* with *records* in one step (a crash leaves the old file or the new one)."""
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as output:
        output.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
        output.flush()
        os.fsync(output.fileno())
    os.replace(temporary, path)


class _Appender:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        _cut_partial_line(path)

    def write(self, *records: dict[str, Any]) -> None:
        with self.lock, self.path.open("a", encoding="utf-8") as output:
            for record in records:
                output.write(json.dumps(record, ensure_ascii=False) + "\n")
            output.flush()
            os.fsync(output.fileno())


@dataclass
class GoldSummary:
    """What became of the questions on the way to a gold answer."""

    #: Gold query returned nothing: dropped, as in the paper.
    empty: list[str] = field(default_factory=list)
    #: Gold result cut at the size limit: excluded, since it cannot be scored.
    cut: list[str] = field(default_factory=list)
    #: Gold query failed (status: ids); tried again on the next run.
    failed: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def with_gold_answers(examples: list[Example], kb: KnowledgeBase, out_dir: Path,
                      progress: bool = True) -> tuple[list[Example], GoldSummary]:
    """Examples with a usable gold answer: the file's own, else the gold query's result (stored with its time).

    Questions whose gold query returns nothing are dropped, as the paper did;
    a result cut at the size limit excludes its question; a query that timed
    out, failed, or met an unreachable knowledge base is recorded with its
    status and run again the next time, until it gives a final answer.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    stored = {question_key(record): record for record in read_jsonl(out_dir / "gold.jsonl")}
    appender = _Appender(out_dir / "gold.jsonl")
    missing = [example for example in examples if example.gold_answer is None
               and stored.get(example_key(example), {}).get("status") not in GOLD_FINAL]
    for example in tqdm(missing, desc="gold answers", unit="query", disable=not progress or not missing):
        record = {"id": example.id, "source": example.source, "split": example.split}
        try:
            result = kb.execute(example.gold_sparql)
        except KBUnavailable as error:
            record.update(answer=None, status="unreachable", message=str(error), retrieved_at=now())
        else:
            status = "cut" if result.truncated else result.status
            record.update(answer=result.answer if not result.truncated and result.status.ran else None, status=status,
                          message=result.message, retrieved_at=now())
        stored[example_key(example)] = record
        appender.write(record)
    kept: list[Example] = []
    summary = GoldSummary()
    for example in examples:
        if example.gold_answer is None:
            record = stored[example_key(example)]
            if record["status"] == "cut":
                summary.cut.append(example.id)
                continue
            if record["status"] not in GOLD_FINAL:
                summary.failed.setdefault(record["status"], []).append(example.id)
                continue
            if record["answer"] is None or record["answer"] == []:  # an ASK's False is an answer
                summary.empty.append(example.id)
                continue
            example = replace(example, gold_answer=record["answer"])
        kept.append(example)
    return kept, summary


def score(record: dict[str, Any], numbers_by_value: bool = False, dataset: Dataset | None = None
          ) -> dict[str, Any]:
    """Write the figures of *dataset*'s headline scorer (:mod:`harness.scoring`) into a result *record*: row-major
    F1 and EM with the stricter QALD variant's per-question figures (and the post-processed answer's F1 and EM)
    for SPARQL results, the accuracy for KQA Pro's strings; the report computes GERBIL's and TEXT2SPARQL's from
    the answers.  Without *dataset*, the one the record's ``source`` names."""
    return headline(dataset or dataset_of_line(record), numbers_by_value).judge(record)


def upstream_postprocessed(result: AgentResult, kb: KnowledgeBase) -> dict[str, Any] | None:
    """The final query after upstream's post-processing, and its answer from *kb* (``None`` without a final query).

    Scored beside the agent's own answer, never in its place; the query runs
    only when the post-processing changed it.
    """
    if result.final_sparql is None:
        return None
    sparql = postprocess(result.final_sparql, stopped=result.stop_reason == StopReason.STOP)
    if sparql == result.final_sparql:
        return {"sparql": sparql, "answer": result.answer, "status": "unchanged"}
    try:
        outcome = kb.execute(sparql)
    except KBUnavailable as error:
        return {"sparql": sparql, "answer": None, "status": "unreachable", "message": str(error)}
    return {"sparql": sparql, "answer": outcome.answer, "status": outcome.status}


def result_record(example: Example, result: AgentResult, part: int = 0, numbers_by_value: bool = False,
                  postprocessed: dict[str, Any] | None = None, repeat: int = 1) -> dict[str, Any]:
    """One line of ``results.jsonl``; ``actions`` counts the final path only, as the paper's Table 5 does."""
    queries = [step for step in result.path if step.action == "execute_sparql" and step.query_status]
    return score({
        "id": example.id, "question": example.question, "source": example.source, "split": example.split,
        "repeat": repeat, "part": part, "gold_sparql": example.gold_sparql, "gold_answer": example.gold_answer,
        "predicted_sparql": result.final_sparql, "predicted_answer": result.answer,
        "predicted_variables": result.variables, "steps": len(result.path),
        "actions": dict(Counter(step.action for step in result.path)),
        "rolled_back": sum(step.rolled_back for step in result.steps), "id_checks": result.id_checks,
        "stop_reason": result.stop_reason, "last_query_status": queries[-1].query_status if queries else None,
        "protocol": result.protocol, "protocol_switch": result.protocol_switch, "model": result.model,
        "engine": result.final_engine, "usage": result.usage.to_dict(),
        **({"postprocessed": dict(postprocessed)} if postprocessed else {}),
    }, numbers_by_value)


def _repair(out_dir: Path) -> set[RunKey]:
    """Make results and traces agree after a crash; return the keys of finished answers."""
    results_path, traces_path = out_dir / "results.jsonl", out_dir / "traces.jsonl"
    for path in (results_path, traces_path):
        _cut_partial_line(path)
    finished = {run_key(record) for record in read_jsonl(results_path)}
    traces = read_jsonl(traces_path)
    kept, seen = [], set()
    for trace in traces:
        key = run_key(trace)
        if key in finished and key not in seen:
            kept.append(trace)
            seen.add(key)
    if len(kept) != len(traces):
        _write_lines(traces_path, kept)
    return finished


def evaluate(examples: list[Example], answer: Answerer, out_dir: Path, workers: int = 4, progress: bool = True,
             part: int = 0, numbers_by_value: bool = False,
             record: Callable[[Example, AgentResult], dict[str, Any]] | None = None,
             postprocess_kb: KnowledgeBase | None = None, repeats: int = 1
             ) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Answer every example, *repeats* times, that ``results.jsonl`` does not hold yet.

    *record* makes a finished question's line (default: :func:`result_record`, row-major F1 and EM).
    With *postprocess_kb*, each final query is also scored after upstream's
    post-processing (run on that knowledge base), beside the agent's own.
    Returns all finished records and the number of this run's failures by
    kind (``llm_error``, ``kb_error``), which are recorded in
    ``failures.jsonl`` and tried again next time.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    finished = _repair(out_dir)
    wanted = [(example, repeat) for repeat in range(1, repeats + 1) for example in examples]
    pending = [(example, repeat) for example, repeat in wanted if (*example_key(example), repeat) not in finished]
    results, traces = _Appender(out_dir / "results.jsonl"), _Appender(out_dir / "traces.jsonl")
    failures_log = _Appender(out_dir / "failures.jsonl")
    failures: Counter[str] = Counter()

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool, \
            tqdm(total=len(wanted), initial=len(wanted) - len(pending), desc="questions", unit="q",
                 disable=not progress) as bar:
        def work(example: Example) -> tuple[AgentResult, dict[str, Any] | None]:
            result = answer(example)
            finished_run = postprocess_kb is not None and result.stop_reason not in SERVICE_FAILURES
            return result, upstream_postprocessed(result, postprocess_kb) if finished_run else None

        futures = {pool.submit(work, example): (example, repeat) for example, repeat in pending}
        for future in as_completed(futures):
            example, repeat = futures[future]
            result, postprocessed = future.result()
            bar.update(1)
            if result.stop_reason in SERVICE_FAILURES:
                failures[result.stop_reason] += 1
                failures_log.write({"id": example.id, "repeat": repeat, "kind": result.stop_reason,
                                    "message": result.stop_message, "part": part, "at": now()})
                bar.write(f"{example.id}: {result.stop_reason}: {result.stop_message} (will be retried)")
                continue
            traces.write({"id": example.id, "source": example.source, "split": example.split, "repeat": repeat,
                          "trace": result.to_dict()})
            results.write({**record(example, result), "repeat": repeat} if record
                          else result_record(example, result, part, numbers_by_value, postprocessed, repeat))
    keys = {(*example_key(example), repeat) for example, repeat in wanted}
    return [line for line in read_jsonl(out_dir / "results.jsonl") if run_key(line) in keys], failures


def rescore(out_dir: Path, numbers_by_value: bool = False, dataset: Dataset | None = None) -> list[dict[str, Any]]:
    """Score stored predictions again (after a metric change, say): no model, no network."""
    if not out_dir.is_dir():
        raise FileNotFoundError(f"{out_dir} is not a directory: name the --out directory of an earlier run")
    path = out_dir / "results.jsonl"
    records = [score(record, numbers_by_value, dataset) for record in read_jsonl(path)]
    if records:
        _write_lines(path, records)
    return records


_FENCED = re.compile(r"```(?:sparql)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def baseline_answerer(llm: ChatModel, kb: KnowledgeBase) -> Answerer:
    """The paper's "LLM writes SPARQL directly": one call, no exploration, the query run once.

    A model or knowledge base that cannot be reached ends the question as
    ``llm_error`` or ``kb_error``, recorded and retried like the agent's.
    """

    def answer(example: Example) -> AgentResult:
        started = time.monotonic()
        usage = Usage()
        try:
            completion = llm.complete([{"role": "user", "content": render("baseline", question=example.question)}],
                                      temperature=0.0)
        except LLMUnavailable as error:
            return AgentResult(example.question, None, None, [], [], StopReason.LLM_ERROR, str(error), usage)
        usage.llm_calls, usage.prompt_tokens = 1, completion.prompt_tokens
        usage.completion_tokens, usage.cached_tokens = completion.completion_tokens, completion.cached_tokens
        fenced = _FENCED.search(completion.content)
        sparql = (fenced.group(1) if fenced else completion.content).strip()
        usage.kb_calls = 1
        try:
            result = kb.execute(sparql)
        except KBUnavailable as error:
            usage.seconds = round(time.monotonic() - started, 3)
            return AgentResult(example.question, sparql, None, [], [], StopReason.KB_ERROR, str(error), usage)
        usage.seconds = round(time.monotonic() - started, 3)
        observation, seen = observe_query_result(result)
        step = Step(completion.content, "execute_sparql", sparql, observation, seen=seen)
        step.record_query(result)
        return AgentResult(example.question, sparql, result.answer, result.variables, [step], StopReason.STOP,
                           "one query written directly", usage, protocol="text", model=completion.model)

    return answer
