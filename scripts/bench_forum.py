"""Forum parsing on pathological and large pages: each case at size n and 2n, so linear work shows a ratio near 2.

    python -m scripts.bench_forum [--repeat 3]

A question over the cap (20,000 characters) is not read further: the 120 KB question of 60,000
lines is answered with a note, so only the page scan is timed for it.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from bot.forum import MAX_REQUEST_CHARS, extract_request, parse_sections
from bot.forum_decisions import locate_after_change, mark_answered
from bot.history import Attribution

SIGNATURE = "[[User:Ann|Ann]] ([[User talk:Ann|talk]]) 12:00, 20 November 2026 (UTC)"


def long_question(lines: int) -> str:
    """A question of many short lines (about 2 characters each), then a signature."""
    return "== Long ==\n" + "a\n" * lines + SIGNATURE + "\n"


def stamps_on_one_line(count: int) -> str:
    """Many timestamps after one user link on a single line."""
    return "== Stamps ==\n[[User:Ann|Ann]] " + "12:00, 20 November 2026 (UTC) " * count + "\n"


def unclosed_tags(count: int) -> str:
    """Many inert-tag openers that are never closed (each would send a naive parser to the end of the page)."""
    return "== Tags ==\n" + "<nowiki>x <pre>y " * count + SIGNATURE + "\n"


def many_sections(count: int) -> str:
    """A busy forum: sections of a question, a reply and a thanks, about 400 characters each."""
    return "".join(f"== Question {number} ==\nWhich items have property P{number}? {SIGNATURE}\n"
                   f":Try this query. {SIGNATURE}\n::Thanks! {SIGNATURE}\n\n" for number in range(count))


def parse(text: str) -> None:
    """What every pass does: the sections, their signatures, comments and identity, whether the bot replied."""
    mark_answered(parse_sections(text), "SpinachBot")


def parse_and_read(text: str) -> None:
    """A pass that also reads the request of every section (each one short enough) as the model would get it."""
    sections = parse_sections(text)
    mark_answered(sections, "SpinachBot")
    for section in sections:
        if len(section.opening) <= MAX_REQUEST_CHARS:
            extract_request(section)


def attribute(text: str) -> None:
    """One new section appended to the page: the attribution carried to the new text."""
    Attribution.first_look(1, text).advance(2, "Ann", text + f"\n== New ==\nA question? {SIGNATURE}\n")


def read_before_saving(text: str) -> Callable[[], None]:
    """The re-read before saving: someone added a line meanwhile; the last section is found again."""
    attribution = Attribution.first_look(1, text)
    key = parse_sections(text, attribution)[-1].key
    return lambda: locate_after_change(attribution, text + ":A late comment.\n", key, "SpinachBot")


def timed(work: Callable[[str], None]) -> Callable[[str], Callable[[], None]]:
    return lambda text: lambda: work(text)


CASES: list[tuple[str, Callable[[int], str], int, Callable[[str], Callable[[], None]]]] = [
    ("question of n lines", long_question, 60_000, timed(parse)),
    ("n timestamps on one line", stamps_on_one_line, 16_000, timed(parse)),
    ("n unclosed <nowiki>/<pre>", unclosed_tags, 20_000, timed(parse)),
    ("page of n sections", many_sections, 5_000, timed(parse)),
    ("page of n sections, every request read", many_sections, 5_000, timed(parse_and_read)),
    ("page of n sections, attribution carried", many_sections, 5_000, timed(attribute)),
    ("page of n sections, re-read before saving", many_sections, 5_000, read_before_saving),
]


def best_of(repeat: int, work: Callable[[], None]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the best is shown")
    args = parser.parse_args(argv)
    print("| case | n | size (KB) | time at n (s) | time at 2n (s) | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, build, n, prepare in CASES:
        small, large = build(n), build(2 * n)
        at_n, at_2n = best_of(args.repeat, prepare(small)), best_of(args.repeat, prepare(large))
        print(f"| {name} | {n:,} | {len(small) / 1000:,.0f} | {at_n:.3f} | {at_2n:.3f} | {at_2n / at_n:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
