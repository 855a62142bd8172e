"""The report on KQA Pro runs: accuracy with its interval, by question type and reasoning, beside the published
figures when the run is comparable to them, and each wrong answer.

A run is set beside the published figures only when it is comparable: the
open-ended setting, every question of a published split scored, a named
model.  The figures are test-set accuracies; the test split's answers are
not public, so a run scores the validation split, drawn like the test split
from the same questions (an 80/10/10 split), and its test predictions go to
the leaderboard (:func:`harness.kqapro.leaderboard_lines`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.kqapro import PUBLISHED_QUESTIONS, QUESTION_TYPES, REASONING, prediction
from harness.kqapro_engine import NO_ANSWER
from harness.prices import Price
from harness.reporting import ACTIONS, USAGE, action_columns, bootstrap_interval, left_out, load_run, model_of

#: Published accuracies on KQA Pro's test set, open-ended, as their papers report them.
ANCHORS = (
    ("BART to SPARQL, fine-tuned (Cao et al., ACL 2022)", 89.68),
    ("BART to KoPL programs, fine-tuned (Cao et al., ACL 2022), about", 90.5),
    ("Interactive-KBQA, few-shot LLM agent (Xiong et al., ACL 2024)", 75.35),
    ("human experts (Cao et al., ACL 2022)", 97.5),
)
TYPES = tuple(dict.fromkeys(QUESTION_TYPES.values()))


@dataclass
class KqaproSummary:
    directory: Path
    info: dict[str, Any]
    records: list[dict[str, Any]]
    #: Records with a gold answer (none in the test split).
    judged: list[dict[str, Any]]
    accuracy: float | None
    interval: tuple[float, float] | None
    by_type: dict[str, tuple[int, int]]
    by_reasoning: dict[str, tuple[int, int]]
    cost: dict[str, float]
    dollars: float | None
    actions: dict[str, float]
    left_out: dict[str, Any] = field(default_factory=dict)
    #: Accuracy by the project's more lenient reading (:func:`harness.kqapro.answer_text`), a second figure.
    lenient_accuracy: float | None = None
    #: Answers with a gold answer recorded before the engine's reading was (no headline figure for them).
    unread: int = 0

    @property
    def setting(self) -> str:
        return self.info.get("setting", "open")

    @property
    def split(self) -> str:
        return self.info.get("split", "?")

    def comparable(self) -> tuple[bool, str]:
        """Whether the run stands beside the published figures, and why not."""
        published = PUBLISHED_QUESTIONS.get(self.split)
        model = self.info.get("model") or ""
        if self.accuracy is None:
            return False, f"the {self.split} split has no public answers (send its predictions to the leaderboard)"
        if self.setting != "open":
            return False, "the figures are open-ended, this run is multiple-choice"
        if published is None or len(self.judged) != published:
            return False, (f"{len(self.judged):,} of the {self.split} split's "
                           f"{published:,} questions scored" if published else f"the {self.split} split")
        if not model or model == "?":
            return False, "the run names no model"
        return True, ""


def _tally(records: list[dict[str, Any]], keys) -> dict[str, tuple[int, int]]:
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for record in records:
        for key in keys(record):
            total[key] += 1
            right[key] += bool(record["correct"])
    return {key: (right[key], total[key]) for key in total}


def summarize_kqapro(directory: Path, prices: dict[str, Price] | None = None) -> KqaproSummary:
    info, records = load_run(directory)
    judged = [record for record in records if record.get("correct") is not None]
    scores = [100.0 * record["correct"] for record in judged]
    count = len(records)
    dollars = None
    if prices is not None:
        models = [model_of(info, record) for record in records]
        if all(model in prices for model in models):
            dollars = sum(prices[model].dollars(record["usage"]) for model, record in zip(models, records)) / count
    return KqaproSummary(
        directory, info, records, judged, sum(scores) / len(scores) if scores else None,
        bootstrap_interval(scores) if scores else None,
        _tally(judged, lambda record: [record["question_type"]]), _tally(judged, lambda record: record["reasoning"]),
        {name: sum(record["usage"].get(name, 0) for record in records) / count for name in USAGE}, dollars,
        {name: sum(record["actions"].get(name, 0) for record in records) / count for name in ACTIONS},
        left_out(info), _lenient_accuracy(records),
        sum(1 for record in records if record.get("gold_answer") is not None and "engine_answer" not in record))


def _lenient_accuracy(records: list[dict[str, Any]]) -> float | None:
    judged = [record["correct_lenient"] for record in records if record.get("correct_lenient") is not None]
    return 100.0 * sum(judged) / len(judged) if judged else None


def _share(right: int, total: int) -> str:
    return f"{right}/{total} {100 * right / total:5.1f}" if total else "-"


def print_kqapro_report(summaries: list[KqaproSummary], wrong: int = 20) -> None:
    print("KQA Pro accuracy: each final query read as KQA Pro's SPARQL engine reads it (the kind of answer from "
          "the query's form, an answer only from one row), judged as its evaluate.py judges (equal once integral "
          "numbers lose their decimals; a date and a year agree on the year); beside it, labelled, the project's "
          "more lenient reading (the first row's first column, whatever the query's form), never the one to "
          "compare with the leaderboard")
    print(f"{'run':<28} {'split':<6} {'setting':<8} {'model':<24} {'n':>6} {'accuracy':>9} {'95% CI':>13} "
          f"{'lenient (project)':>18}")
    for s in summaries:
        interval = f"{s.interval[0]:5.1f}-{s.interval[1]:5.1f}" if s.interval else f"{'-':>11}"
        accuracy = f"{s.accuracy:9.2f}" if s.accuracy is not None else f"{'-':>9}"
        lenient = f"{s.lenient_accuracy:18.2f}" if s.lenient_accuracy is not None else f"{'-':>18}"
        print(f"{s.directory.name:<28} {s.split:<6} {s.setting:<8} {s.info.get('model', '?'):<24} "
              f"{len(s.records):>6} {accuracy} {interval:>13} {lenient}")
    for s in summaries:
        if s.unread:
            print(f"  {s.directory.name}: answers recorded before the engine's reading was: {s.unread}; they have "
                  "the lenient figure only; run them again for the headline one")
    for s in summaries:
        columns = action_columns([s.info])
        print(f"\n{s.directory.name}")
        counts = s.left_out
        if counts:
            print(f"  {counts['in_split']:,} questions in the split, {counts['asked']:,} asked, "
                  f"{counts['unfinished']:,} unfinished (model or knowledge base failed); {len(s.records):,} answered")
        comparable, why = s.comparable()
        if comparable:
            print(f"  beside the published test-set figures (this run: {s.split}, {s.info.get('model')}):")
            for name, figure in ANCHORS:
                print(f"    {figure:6.2f}  {name}")
            print(f"    {s.accuracy:6.2f}  this run")
        else:
            print(f"  not set beside the published figures: {why}")
        if s.judged:
            print("  by question type (the paper's Table 3): " + "; ".join(
                f"{name} {_share(*s.by_type[name])}" for name in TYPES if name in s.by_type))
            if s.by_reasoning:
                print("  by reasoning: " + "; ".join(f"{name} {_share(*s.by_reasoning[name])}"
                                                     for name in (*REASONING, "zero-shot") if name in s.by_reasoning))
        dollars = f"${s.dollars:.4f}" if s.dollars is not None else "no price"
        print(f"  per question: {dollars}, " + ", ".join(f"{s.cost[name]:.1f} {name}" for name in USAGE)
              + "; actions on the final path: "
              + ", ".join(f"{s.actions[name]:.2f} {columns[name]}" for name in ACTIONS))
        stops = Counter(record["stop_reason"] for record in s.records)
        print("  runs ended by: " + ", ".join(f"{reason} {count}" for reason, count in stops.most_common()))
        mistakes = [record for record in s.judged if not record["correct"]]
        if mistakes:
            print(f"  wrong answers ({len(mistakes)}; the first {min(wrong, len(mistakes))}):")
        for record in sorted(mistakes, key=lambda record: int(record["id"]))[:wrong]:
            engine = record.get("engine_answer")
            read = repr(engine) if engine is not None else f"nothing ({record.get('engine_note', '')})"
            if record.get("setting") == "choices":
                read += f", choice {prediction(record)!r}" if prediction(record) != (engine or NO_ANSWER) \
                    else ", none of the choices"
            lenient = f"; the lenient reading {record['answer']!r}" if record.get("answer") != engine else ""
            print(f"    #{record['id']} {record['question_type']}: gold {record['gold_answer']!r}, engine read "
                  f"{read}{lenient} ({record['stop_reason']}): {record['question'][:90]}")
        if not s.judged and s.records:
            print(f"  {len(s.records):,} predictions, e.g. #{s.records[0]['id']} {prediction(s.records[0])!r}; "
                  "export them with --kqapro-predictions FILE")
