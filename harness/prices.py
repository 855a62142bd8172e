"""Dollars per question from token counts and an editable price table.

The table (``harness/prices.json`` by default, or any file of the same shape
given with ``--prices``) holds, per model, US dollars per million input
(uncached prompt), cached prompt and output tokens.  Providers count cached
tokens inside the prompt tokens, so a call costs::

    (prompt - cached) × input + cached × cached + completion × output   (per million)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    cached: float
    output: float

    def dollars(self, usage: dict[str, Any]) -> float:
        cached = usage.get("cached_tokens", 0)
        uncached = usage.get("prompt_tokens", 0) - cached
        return (uncached * self.input + cached * self.cached + usage.get("completion_tokens", 0) * self.output) / 1e6


def load_prices(path: Path | None = None) -> dict[str, Price]:
    """The price table at *path*, or the one shipped with the harness; a malformed file is a clear error."""
    text = path.read_text(encoding="utf-8") if path else resources.files("harness").joinpath("prices.json").read_text(
        encoding="utf-8")
    where = path or "harness/prices.json"
    try:
        models = json.loads(text)["models"]
        return {name: Price(float(entry["input"]), float(entry["cached"]), float(entry["output"]))
                for name, entry in models.items()}
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{where}: not a price table ({error!r}); it needs "
                         '{"models": {"NAME": {"input": …, "cached": …, "output": …}}} '
                         "in dollars per million tokens") from error
