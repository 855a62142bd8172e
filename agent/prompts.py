"""Load the Jinja2 prompt templates in ``prompts/``.

``StrictUndefined`` turns a misspelt variable into an error at render time
instead of a silently empty hole in a prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"

_environment = jinja2.Environment(
    loader=jinja2.FileSystemLoader(PROMPTS_DIR),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=False,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)


def render(name: str, **variables: Any) -> str:
    """Render ``prompts/<name>.j2``."""
    return _environment.get_template(f"{name}.j2").render(**variables).strip()
