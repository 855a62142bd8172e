"""A pass answering one question on a 2 MB forum page, with and without 200 kB of text that stalls parsers.

    python -m scripts.bench_pass [--repeat 3]      # the bot's own reading in a pass: no wiki, no model
    python -m scripts.bench_pass --wiki            # and whole passes on the wiki of PYWIKIBOT_DIR (as its bot
                                                   # account, on two pages of its own), with the model and
                                                   # Wikidata the environment names (see python -m bot.run --help)

Both pages hold about 2 MB of answered forum threads and end with one new question.  On the hostile page,
200 kB of that is ``{{a|`` never closed (mwparserfromhell's and pywikibot's parsers backtrack over it,
quadratically): half in a hidden ``<div>`` in the page's lead, half in a hidden ``<div>`` in the new
question's thread.  The goal: the hostile pass takes at most twice the clean one.

The first table times what the bot does with the page's text in a pass (sections and signatures, who wrote
what, the opt-out check of the lead and the section, the request and the thread handed to the model, where
the reply goes), in wall-clock and CPU seconds of this process (on a machine other work shares, the CPU
seconds are the figure to compare; the ratio is theirs); the second, with ``--wiki``, whole passes (the
wiki's answers and the model included), in wall-clock seconds only: the wiki's work is in other processes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bot.forum import Reading, extract_request, find_headings, page_lead, parse_sections
from bot.forum_decisions import mark_answered, reply_point
from bot.history import Attribution
from bot.wiki import opt_out_calls

PAGE_CHARS = 2_000_000
HOSTILE_CHARS = 200_000
STALLING = "{{a|"
QUESTION_MINUTE = 59


def signature(user: str, minute: int) -> str:
    return f"[[User:{user}|{user}]] ([[User talk:{user}|talk]]) 12:{minute:02d}, 20 November 2026 (UTC)"


def thread(number: int) -> str:
    """One answered forum thread, about 400 characters."""
    return (f"== Question {number} ==\nWhich items have property P{number}? {signature('Ann', number % 60)}\n"
            f":Try this query. {signature('Helper', number % 60)}\n::Thanks! {signature('Ann', number % 60)}\n\n")


def pages(hostile: bool) -> tuple[str, str]:
    """The page before the question and after it: (backlog, with the question)."""
    half = STALLING * (HOSTILE_CHARS // 2 // len(STALLING)) if hostile else ""
    lead = "Ask your SPARQL questions here.\n" + (f'<div style="display:none">{half}</div>\n' if hostile else "")
    body, number = [], 0
    while len(lead) + sum(map(len, body)) < PAGE_CHARS - HOSTILE_CHARS // 2 * hostile:
        body.append(thread(number))
        number += 1
    backlog = lead + "\n" + "".join(body)
    question = (f"== Advisors of Euler ==\nWho were the doctoral advisors of Leonhard Euler? "
                f"{signature('Alice', QUESTION_MINUTE)}\n")
    if hostile:
        question += f':<div style="display:none">{half}</div> {signature("Mallory", QUESTION_MINUTE)}\n'
    return backlog, backlog + question


def own_reading(backlog: str, asked: str) -> None:
    """What a pass does with the text: carry who wrote what, read the sections, check the opt-outs of the lead
    and of the new section, read its request and thread, find where the reply goes."""
    attribution = Attribution.first_look(1, backlog).advance(2, "Alice", asked)
    reading = Reading(find_headings(asked))  # in a pass, MediaWiki's reading: the same headings
    sections = parse_sections(asked, attribution, reading)
    mark_answered(sections, "SpinachBot")
    section = sections[-1]
    for text in (page_lead(asked, reading), section.text):
        opt_out_calls(text, {"bots", "nobots"})
    extract_request(section)
    reply_point(asked, section)


def best_of(repeat: int, work: Callable[[], object]) -> tuple[float, float]:
    """The least wall-clock and the least CPU seconds of *repeat* runs of *work*."""
    walls, cpus = [], []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        work()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def wiki_pass(hostile: bool) -> tuple[float, int]:
    """A whole pass answering the question on the wiki of PYWIKIBOT_DIR; its seconds and the page's size."""
    import pywikibot

    from bot import run as bot_run

    site = pywikibot.Site()
    site.login()
    title = f"User:{site.username()}/Bench pass {'hostile' if hostile else 'clean'} {int(time.time())}"
    backlog, asked = pages(hostile)
    page = pywikibot.Page(site, title)
    page.text = backlog
    page.save(summary="benchmark page", bot=True, quiet=True)
    with tempfile.TemporaryDirectory() as directory:
        state = str(Path(directory) / "state.sqlite")
        arguments = ["--page", title, "--once", "--live", "--state", state]
        if bot_run.main(arguments) != 0:  # the first look: the threads are backlog
            raise RuntimeError(f"the first pass over {title} failed")
        page.text = asked  # the question is signed by Alice: the bot answers it whoever saved it
        page.save(summary="a question", bot=True, quiet=True)
        started = time.perf_counter()
        code = bot_run.main(arguments)
        seconds = time.perf_counter() - started
    replies = sum(1 for revision in page.revisions(total=5) if revision.user == site.username()
                  and "reply" in (revision.comment or ""))
    if code != 0 or replies != 1:
        raise RuntimeError(f"the pass over {title} did not answer the question (exit {code}, {replies} replies)")
    return seconds, len(asked.encode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of the bot's own reading; the best is shown")
    parser.add_argument("--wiki", action="store_true",
                        help="also time whole passes on the wiki of PYWIKIBOT_DIR (it gets two pages of 2 MB)")
    args = parser.parse_args(argv)
    print("The bot's own reading of the page in a pass\n")
    print("| page | size (MB) | text that stalls parsers (kB) | wall (s) | CPU (s) | ratio (CPU) |")
    print("|---|---:|---:|---:|---:|---:|")
    clean = None
    for hostile in (False, True):
        backlog, asked = pages(hostile)
        wall, cpu = best_of(args.repeat, lambda: own_reading(backlog, asked))
        clean = clean or cpu
        print(f"| {'hostile' if hostile else 'clean'} | {len(asked.encode()) / 1e6:.2f} | "
              f"{HOSTILE_CHARS // 1000 * hostile} | {wall:.2f} | {cpu:.2f} | {cpu / clean:.2f} |", flush=True)
    if not args.wiki:
        return 0
    if not os.environ.get("PYWIKIBOT_DIR"):
        print("error: --wiki needs PYWIKIBOT_DIR (the bot account's user-config.py)", file=sys.stderr)
        return 2
    print("\nA whole pass answering the question (the wiki's reading and checks and the model included)\n")
    print("| page | size (MB) | text that stalls parsers (kB) | pass (s) | ratio |")
    print("|---|---:|---:|---:|---:|")
    clean = None
    for hostile in (False, True):
        seconds, size = wiki_pass(hostile)
        clean = clean or seconds
        print(f"| {'hostile' if hostile else 'clean'} | {size / 1e6:.2f} | {HOSTILE_CHARS // 1000 * hostile} | "
              f"{seconds:.1f} | {seconds / clean:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
