"""Report on evaluation runs: EM and F1 with 95% intervals, the paper's beside a comparable run, why each question
scored so, QALD's metric, cost, actions, a plot.

    python -m scripts.report runs/qald10 runs/spinach-dev
    python -m scripts.report --questions runs/qald10          # every question with its diagnosis
    python -m scripts.report --prices my-prices.json runs/qald10
    python -m scripts.report --compare runs/before runs/after     # refused when they measured different things
    python -m scripts.report --qald-json runs/qald10/qald.json runs/qald10    # for GERBIL
    python -m scripts.report --qald-json qald-r2.json --repeat 2 runs/qald10-x3   # one repeat of a run with --repeats
    python -m scripts.report runs/kqapro-val                                  # KQA Pro: accuracy
    python -m scripts.report --kqapro-predictions predict.txt runs/kqapro-test   # for KQA Pro's leaderboard
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from agent.cli import eval_extra, program_name
from harness.diagnostics import DIAGNOSES
from harness.examples import describe_exclusion
from harness.run_info import read_run_info
from harness.text2sparql_metric import CLIENT as T2S_CLIENT
from harness.upstream_postprocessing import LABEL

with eval_extra("scripts.report"):
    from harness.gerbil_metric import NAMES
    from harness.reporting import (ACTIONS, PAPER, PAPER_COST, USAGE, RunSummary, action_columns, dataset_id,
                                   last_settings, left_out, load_run, model_label, plot_run, summarize)


def _left_out_line(s: RunSummary) -> str:
    counts = s.left_out
    if not counts:
        return f"{s.directory.name}: {s.questions} scored (run.json records no counts of left-out questions)"
    language = s.info.get("language", "?")
    return (f"{s.directory.name}: {counts['in_split']} in the split, {counts['asked']} asked; "
            f"skipped {counts['skipped_language']} (no {language!r} text), "
            f"dropped {counts['dropped_empty']} (gold empty), excluded {counts['excluded_cut']} (gold cut), "
            f"{counts['gold_failed']} without gold yet (gold query failed), "
            f"{counts['unfinished']} unfinished (model or knowledge base failed); {s.questions} scored")


def _spread(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.1f}" if values else "-"
    return (f"mean {statistics.mean(values):.1f}, SD {statistics.stdev(values):.1f}, "
            f"{min(values):.1f}-{max(values):.1f} ({', '.join(f'{value:.1f}' for value in values)})")


def print_report(summaries: list[RunSummary], questions: bool = False) -> None:
    print(f"{'run':<28} {'system':<52} {'n':>5} {'EM':>6} {'95% CI':>13} {'F1':>6} {'95% CI':>13} "
          f"{'paper EM/F1':>12}")
    for s in summaries:
        settings = last_settings(s.info)
        key = (settings.get("dataset", "?"), settings.get("split", "?"))
        paper = PAPER.get(key) if not s.paper_gaps else None
        label = f"{key[0]} {key[1]} " + ("baseline" if settings.get("baseline") else "agent") + \
            f" ({model_label(s)})"
        print(f"{s.directory.name:<28} {label:<52} {s.questions:>5} {s.em:6.1f} "
              f"{s.em_interval[0]:5.1f}-{s.em_interval[1]:5.1f}  {s.f1:6.1f} {s.f1_interval[0]:5.1f}-"
              f"{s.f1_interval[1]:5.1f}  {(f'{paper[0]:.1f}/{paper[1]:.1f}' if paper else '-'):>12}")
    print("(EM and F1: the SPINACH paper's row-major metric; 95% bootstrap intervals over questions; the paper's "
          "figures are SPINACH with GPT-4o, shown only beside "
          "a run they can be compared with)")
    for s in summaries:
        if s.paper_gaps:
            print(f"  {s.directory.name}: no paper figure: " + "; ".join(s.paper_gaps))
    for s in summaries:
        if s.gold_caveat:
            print(f"  warning, {s.directory.name}: {s.gold_caveat}")
    post = [s for s in summaries if s.postprocessed is not None]
    if post:
        print(f"\n{LABEL} (upstream's code applied to the agent's final queries, as the paper's figures were "
              "scored; not the agent's answer)")
        for s in post:
            print(f"  {s.directory.name}: F1 {s.postprocessed[0]:.1f}, EM {s.postprocessed[1]:.1f}")
    repeated = [s for s in summaries if len(s.repeat_f1) > 1]
    if repeated:
        print("\nAcross repeats (each repeat answers the whole split again; sampling at temperature "
              "1.0): the spread of the figure itself, beside the interval over questions above")
        for s in repeated:
            print(f"  {s.directory.name}: {len(s.repeat_f1)} repeats; F1 {_spread(s.repeat_f1)}; "
                  f"EM {_spread(s.repeat_em)}")
    print("\nSettings (the last part's; run.json keeps every part's)")
    for s in summaries:
        settings = last_settings(s.info)
        sampling = settings.get("sampling") or {}
        code = settings.get("code") or {}
        print(f"  {s.directory.name}: model asked {settings.get('model', '?')}, reported "
              f"{', '.join(f'{name} ({count})' for name, count in s.models.items())}; endpoint "
              f"{settings.get('endpoint', '?')}; sampling "
              f"{', '.join(f'{name} {value}' for name, value in sampling.items()) or '?'}; protocols "
              f"{', '.join(f'{name} {count}' for name, count in s.protocols.items())}; final queries answered by "
              f"{', '.join(f'{name} {count}' for name, count in s.engines.items()) or '?'}")
        source = ", ".join(f"{name} {value}" for name, value in (settings.get("kb_source") or {}).items())
        print(f"    knowledge base {settings.get('kb', '?')}{f' ({source})' if source else ''}; gold from "
              f"{settings.get('gold_source') or settings.get('gold', 'file')}; "
              f"language {settings.get('language', '?')}, "
              f"numeric literals compared {'by value' if settings.get('numbers') == 'value' else 'as written'}; "
              f"prompts {settings.get('prompt', '?')}; code {code.get('commit', code.get('version', '?'))}"
              f"{' with uncommitted changes' if code.get('uncommitted_changes') else ''}; "
              f"{len(s.info.get('parts', []))} part(s)")
    print("\nQuestions left out")
    for s in summaries:
        print("  " + _left_out_line(s))
        if s.left_out.get("examples"):
            print(f"    examples from {last_settings(s.info).get('examples')}: "
                  f"{describe_exclusion(s.left_out['examples'])}")
    qald = [s for s in summaries if s.gerbil is not None]
    if qald:
        print("\nQALD: GERBIL QA's figures, named as GERBIL names them and computed as it computes them (bare values "
              "of every column; a declined answer is precision 0, except in Macro F1 QALD), over the questions "
              "scored; percent")
        print(f"{'run':<28} " + " ".join(f"{name:>15}" for name in NAMES.values()))
        for s in qald:
            print(f"{s.directory.name:<28} "
                  + " ".join(f"{100 * getattr(s.gerbil, field):15.2f}" for field in NAMES))
        print("The project's stricter variant (whole terms: type, language and datatype count; ?xLabel and "
              "?xDescription columns left out; a declined answer is precision 1); percent")
        print(f"{'run':<28} {'F1 QALD':>8} {'QALD P':>8} {'QALD R':>8} {'macro F1':>9} {'micro P':>8} "
              f"{'micro R':>8} {'micro F1':>9}  numbers compared")
        for s in qald:
            q = s.qald
            print(f"{s.directory.name:<28} {100 * q.f1_qald:8.2f} {100 * q.macro_precision:8.2f} "
                  f"{100 * q.macro_recall:8.2f} {100 * q.macro_f1:9.2f} {100 * q.micro_precision:8.2f} "
                  f"{100 * q.micro_recall:8.2f} {100 * q.micro_f1:9.2f}  "
                  f"{'by value' if s.info.get('numbers') == 'value' else 'as written'}")
    print(f"\nTEXT2SPARQL's set figures, as its client ({T2S_CLIENT}, evaluate) computes them: bare values of "
          "every column, the mean over questions whose gold has a value; percent")
    print(f"{'run':<28} {'set_F':>8} {'set_P':>8} {'set_recall':>10} {'scored':>7} {'left out':>9}")
    for s in summaries:
        t = s.text2sparql
        figures = (" ".join(f"{100 * value:{width}.2f}" for value, width in ((t.f1, 8), (t.precision, 8),
                                                                               (t.recall, 10)))
                   if t.f1 is not None else f"{'-':>8} {'-':>8} {'-':>10}")
        print(f"{s.directory.name:<28} {figures} {t.questions - t.left_out:>7} {t.left_out:>9}")
    print("\nWhy each answer scored so (answers per diagnosis; see harness/diagnostics.py)")
    print(f"{'run':<28} " + " ".join(f"{name:>13}" for name in DIAGNOSES))
    for s in summaries:
        print(f"{s.directory.name:<28} " + " ".join(f"{s.diagnoses.get(name, 0):>13}" for name in DIAGNOSES))
    for s in summaries:
        print(f"  {s.directory.name} runs ended by: "
              + ", ".join(f"{reason} {count}" for reason, count in s.stop_reasons.items()))
        for name in DIAGNOSES[1:]:
            found = s.diagnosed.get(name, [])
            if found:
                shown = ", ".join(key if repeat == 1 else f"{key}#{repeat}" for key, repeat in found[:40])
                print(f"  {s.directory.name} {name}: {shown}{' ...' if len(found) > 40 else ''}")
    if questions:
        for s in summaries:
            _, records = load_run(s.directory)
            print(f"\n{s.directory.name}: every answer")
            for record in records:
                print(f"  {record['id']:>6} #{record.get('repeat', 1)} {record.get('diagnosis', '?'):<13} "
                      f"F1 {record['f1']:.2f}  {record.get('stop_reason', '?'):<14} {record['question'][:70]}")
    print(f"\nCost per question (the paper: ${PAPER_COST:.4f} on QALD-10 with GPT-4o)")
    print(f"{'run':<28} {'dollars':>9} " + " ".join(f"{name:>17}" for name in USAGE))
    for s in summaries:
        dollars = f"{s.dollars:9.4f}" if s.dollars is not None else f"{'no price':>9}"
        print(f"{s.directory.name:<28} {dollars} " + " ".join(f"{s.cost[name]:17.1f}" for name in USAGE))
    print("\nActions per question on the final path (mean; rolled-back actions left out, as in the paper's Table 5)")
    columns = action_columns([s.info for s in summaries])
    print(f"{'run':<28} " + " ".join(f"{columns[name]:>21}" for name in ACTIONS) + f" {'all':>6}")
    for s in summaries:
        print(f"{s.directory.name:<28} " + " ".join(f"{s.actions[name]:21.2f}" for name in ACTIONS)
              + f" {sum(s.actions.values()):6.2f}")
    for s in summaries:
        histogram = ", ".join(f"{count}: {n}" for count, n in s.steps_histogram.items())
        png, svg = plot_run(s)
        print(f"\n{s.directory.name}: questions by number of actions: {histogram}\n  plot: {png} and {svg}")


def print_comparison(before: Path, after: Path, allow_different: bool = False) -> None:
    """Two runs question by question; refused when they measured different things (other questions, gold or
    graph), unless *allow_different*, and then what differs is printed above the table."""
    from harness.comparison import compare_records, compared_parts, comparison_gaps, question_gaps, unfingerprinted

    first_info, first = load_run(before)
    second_info, second = load_run(after)
    gaps = comparison_gaps(first_info, second_info) + question_gaps(first, second)
    if gaps and not allow_different:
        raise ValueError(f"{before} and {after} measured different things: they differ in " + "; ".join(gaps)
                         + ". Compare anyway with --allow-different")
    if gaps:
        print("warning: the runs measured different things: they differ in " + "; ".join(gaps)
              + " (compared with --allow-different)")
    measured = compared_parts(first_info, second_info)
    if measured:
        print("the runs differ in what this comparison measures: " + ", ".join(measured))
    older = unfingerprinted(first_info, second_info)
    if older:
        print(f"note: the {' and '.join(older)} run{'s' if len(older) > 1 else ''} record no fingerprint (made "
              "before runs kept one): questions and graph are checked by name and by the paired questions' text")
    result = compare_records(first, second)
    low, high = result.difference_interval
    print(f"{result.paired} questions in both runs, paired by (dataset, split, id): "
          f"mean F1 {100 * result.mean_before:.1f} -> {100 * result.mean_after:.1f} "
          f"(difference {100 * (result.mean_after - result.mean_before):+.1f}, 95% CI {100 * low:+.1f} to "
          f"{100 * high:+.1f}); {len(result.better)} better, {len(result.worse)} worse, "
          f"{result.paired - len(result.better) - len(result.worse)} unchanged; "
          f"paired randomization test p = {result.p_value:.4f}")
    for kind, changes in (("better", result.better), ("worse", result.worse),
                          ("only before", result.only_before), ("only after", result.only_after)):
        print(f"\n{kind}: {len(changes)}")
        for change in changes:
            dataset, split, key = change.key
            print(f"  {dataset} {split} {key:<10} F1 {change.before:.2f} -> {change.after:.2f}  "
                  f"{change.question[:90]}")


def one_repeat(run: Path, records: list[dict], repeat: int | None) -> list[dict]:
    """The records of one repeat of the split: the only one, or the one *repeat* names (an export holds each
    question once: GERBIL matches answers by question id, KQA Pro's leaderboard by line)."""
    repeats = sorted({int(record.get("repeat", 1)) for record in records})
    if repeat is None:
        if len(repeats) > 1:
            raise ValueError(f"{run} holds {len(repeats)} repeats of the split ({', '.join(map(str, repeats))}); "
                             "an export holds each question once: name one with --repeat N")
        return records
    if repeat not in repeats:
        raise ValueError(f"{run} has no repeat {repeat} (it holds {', '.join(map(str, repeats))})")
    return [record for record in records if int(record.get("repeat", 1)) == repeat]


def export_qald_json(path: Path, run: Path, repeat: int | None = None) -> None:
    from harness.qald_json import to_qald_json

    info, records = load_run(run)
    records = one_repeat(run, records, repeat)
    document = to_qald_json(records, dataset_id(info), info.get("language", "en"))
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"wrote {len(records)} questions as QALD-JSON to {path}")


def export_kqapro_predictions(path: Path, run: Path, repeat: int | None = None) -> None:
    from harness.kqapro import leaderboard_lines

    info, records = load_run(run)
    if info.get("dataset") != "kqapro":
        raise ValueError(f"{run} is a run on {info.get('dataset', '?')}, not on KQA Pro")
    records = one_repeat(run, records, repeat)
    unread = [str(record["id"]) for record in records if "engine_answer" not in record]
    if unread:
        raise ValueError(f"answers of {run} recorded before KQA Pro's engine reading was: {len(unread)} (e.g. "
                         f"{', '.join(unread[:5])}); run them again in a new --out directory to export them")
    count = left_out(info).get("in_split") or len(records)
    lines, missing = leaderboard_lines(records, count)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    print(f"wrote {count:,} predictions of KQA Pro's {info.get('split', '?')} split to {path}, one a line in its order"
          + (f"; {len(missing):,} questions have none yet (empty lines: {', '.join(missing[:10])}"
             f"{' ...' if len(missing) > 10 else ''})" if missing else ""))


def _is_kqapro(run: Path) -> bool:
    return read_run_info(run).get("dataset") == "kqapro"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=program_name("scripts.report"), description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path, help="output directories of scripts.evaluate")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                        help="question by question, with a paired significance test")
    parser.add_argument("--allow-different", "--force", dest="allow_different", action="store_true",
                        help="with --compare: compare runs that measured different things (dataset, split, "
                             "questions' text or gold, gold source, numbers mode, answer mode, graph or its "
                             "content), printing what differs above the table")
    parser.add_argument("--prices", type=Path, metavar="FILE",
                        help="price table, dollars per million tokens per model (default: harness/prices.json)")
    parser.add_argument("--qald-json", type=Path, metavar="FILE",
                        help="write the one run named as QALD-JSON (what GERBIL reads) to FILE")
    parser.add_argument("--kqapro-predictions", type=Path, metavar="FILE",
                        help="write the one KQA Pro run named as its leaderboard takes it: one answer a line, in the "
                             "split's order")
    parser.add_argument("--repeat", type=int, metavar="N",
                        help="with --qald-json or --kqapro-predictions on a run with --repeats: export repeat N")
    parser.add_argument("--questions", action="store_true",
                        help="list every answer with its diagnosis, F1 and stop reason")
    args = parser.parse_args(argv)
    if not args.runs and not args.compare:
        parser.error("name at least one run directory, or --compare BEFORE AFTER")
    if (args.qald_json or args.kqapro_predictions) and len(args.runs) != 1:
        parser.error("--qald-json and --kqapro-predictions export one run: name exactly one run directory")
    try:
        if args.qald_json:
            export_qald_json(args.qald_json, args.runs[0], args.repeat)
        elif args.kqapro_predictions:
            export_kqapro_predictions(args.kqapro_predictions, args.runs[0], args.repeat)
        elif args.runs:
            from harness.kqapro_report import print_kqapro_report, summarize_kqapro
            from harness.prices import load_prices

            prices = load_prices(args.prices)
            kqapro = [run for run in args.runs if _is_kqapro(run)]
            if len(kqapro) < len(args.runs):
                print_report([summarize(directory, prices) for directory in args.runs if directory not in kqapro],
                             args.questions)
            if kqapro:
                print_kqapro_report([summarize_kqapro(directory, prices) for directory in kqapro])
        if args.compare:
            for run in args.compare:
                if any(record.get("f1") is None for record in load_run(run)[1]):
                    raise ValueError(f"{run} holds questions without a gold answer (KQA Pro's test split): "
                                     "there is nothing to compare")
            print_comparison(*args.compare, allow_different=args.allow_different)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
