"""Render the bot's reply: the final query, a preview of its rows, the agent's steps collapsed, a signature.

Every piece of text that comes from the model, from Wikidata or from the
asker goes through :mod:`bot.wikitext` before it reaches the template, so the
template itself holds the only markup a reply can contain.  A reply never
exceeds ``max_chars``: the trace is shortened first (observations, then the
oldest steps).
"""

from __future__ import annotations

import jinja2

from agent.observations import shorten_iri
from agent.trace import AgentResult, Step
from bot.forum import Request
from bot.wikitext import inline, preformatted, sparql_template, syntaxhighlight

PREVIEW_ROWS = 5
CELL_CHARS = 200
THOUGHT_CHARS = 1000
_environment = jinja2.Environment(loader=jinja2.PackageLoader("bot", "templates"),
                                  undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                  autoescape=False)


def _cell(term: dict[str, str]) -> str:
    short = shorten_iri(term.get("value", "")) if term.get("type") == "uri" else None
    if short and short[:1] in "QP" and short[1:].isdigit():
        return "{{" + short[0] + "|" + short + "}}"
    return inline(short or term.get("value", ""), CELL_CHARS) or " "


def preview_table(result: AgentResult, rows: int = PREVIEW_ROWS) -> str:
    """The first *rows* rows as a wikitable (entities as {{Q|...}}, which shows their labels)."""
    if not isinstance(result.answer, list) or not result.answer:
        return ""
    variables = result.variables or list(result.answer[0])
    lines = ['{| class="wikitable"', "! " + " !! ".join(inline(name) for name in variables)]
    for row in result.answer[:rows]:
        lines.append("|-")
        lines.append("| " + " || ".join(_cell(row[name]) if name in row else " " for name in variables))
    lines.append("|}")
    if len(result.answer) > rows:
        lines[-1] = f"|-\n| colspan={len(variables)} | … {len(result.answer) - rows} more rows\n|}}"
    return "\n".join(lines)


def _step(number: int, step: Step, observation_chars: int) -> str:
    if step.action == "execute_sparql":
        action = "<code>execute_sparql</code>" + syntaxhighlight(step.argument)
    else:
        action = f"<code>{inline(step.action or 'no action')}({inline(step.argument, THOUGHT_CHARS)})</code>"
    text = f"<br>'''{number}.''' {inline(step.thought, THOUGHT_CHARS)} → {action}"
    if step.rolled_back:
        text += " ''(rolled back)''"
    if step.observation and observation_chars > 0:
        observation = step.observation
        if len(observation) > observation_chars:
            observation = observation[:observation_chars] + " …"
        text += preformatted(observation)
    return text


def _trace(result: AgentResult, observation_chars: int, skip: int) -> str:
    steps = [_step(number, step, observation_chars) for number, step in enumerate(result.steps, 1)]
    if skip:
        steps = [f"<br>''({skip} earlier steps left out)''"] + steps[skip:]
    title = f"'''Steps taken''' ({len(result.steps)}, {result.usage.llm_calls} model calls)"
    return ('<div class="mw-collapsible mw-collapsed">' + title + '<div class="mw-collapsible-content">'
            + "".join(steps) + "</div></div>")


def render_reply(result: AgentResult, request: Request, *, max_chars: int = 20000) -> str:
    """The reply's wikitext, indented one level, ending with the bot's signature."""
    has_query = result.final_sparql is not None and result.answer not in (None, [])
    row_count = None
    if has_query:
        row_count = 1 if isinstance(result.answer, bool) else len(result.answer)
    template = _environment.get_template("reply.wiki.j2")
    for observation_chars in (400, 150, 0):
        for skip in range(0, max(len(result.steps), 1), 2):
            text = template.render(
                query=sparql_template(result.final_sparql) if has_query else "",
                row_count=row_count,
                preview=preview_table(result) if has_query else "",
                reason=inline(result.stop_message or result.stop_reason),
                trace=_trace(result, observation_chars, skip),
            ).strip()
            if len(text) <= max_chars:
                return text
            if observation_chars:
                break
    raise ValueError(f"a reply cannot fit in {max_chars} characters")
