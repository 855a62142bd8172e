"""Forum text as the test wiki's users write it: a signature, a new section under it, a section's body.

One definition for every bot-level test: the same date and the same form MediaWiki expands ``~~~~`` to.
"""

from __future__ import annotations


def signature(user: str = "Alice", minute: int = 0) -> str:
    """*user*'s signature as saved at 12:*minute* on 20 November 2026."""
    return f"[[User:{user}|{user}]] ([[User talk:{user}|talk]]) 12:{minute:02d}, 20 November 2026 (UTC)"


def new_section(heading: str, question: str, user: str = "Alice", minute: int = 0) -> str:
    """A level-2 section asking *question*, signed by *user*, to append to a page's text."""
    return f"\n\n== {heading} ==\n{question} {signature(user, minute)}\n"


def section_text(page: str, heading: str) -> str:
    """The body of the section *heading* of *page* (up to the next level-2 heading)."""
    return page.split(f"== {heading} ==\n", 1)[1].split("\n== ", 1)[0]
