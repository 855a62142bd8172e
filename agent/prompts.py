"""Load the Jinja2 prompt templates shipped in the ``prompts`` package.

The templates are package data, read through ``jinja2.PackageLoader`` (which
uses :mod:`importlib.resources`), so an installed wheel renders the same
prompts as a checkout.  ``StrictUndefined`` turns a misspelt variable into an
error at render time instead of a silently empty hole in a prompt.
"""

from __future__ import annotations

import hashlib
from typing import Any

import jinja2

_environment = jinja2.Environment(
    loader=jinja2.PackageLoader("prompts", "."),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=False,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)


def template_names() -> list[str]:
    """The names :func:`render` accepts: every ``*.j2`` file of the package, without its suffix."""
    return sorted(name.removesuffix(".j2") for name in _environment.list_templates(extensions=["j2"]))


def fingerprint() -> str:
    """A short hash of every template's name and text: two runs with the same value used the same prompts."""
    digest = hashlib.sha256()
    for name in _environment.list_templates(extensions=["j2"]):
        source, _, _ = _environment.loader.get_source(_environment, name)
        digest.update(name.encode() + b"\0" + source.encode() + b"\0")
    return digest.hexdigest()[:12]


def render(name: str, **variables: Any) -> str:
    """Render the prompt template ``<name>.j2``."""
    return _environment.get_template(f"{name}.j2").render(**variables).strip()
