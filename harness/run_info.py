"""``run.json``: what an output directory was run with, part by part.

Each invocation of ``scripts.evaluate`` on a directory is one *part*, with its
settings (dataset and split, the model asked for, the endpoint without its
credentials, sampling, the knowledge base and its endpoints, the gold's
source, the code's commit, repeats; paths relative to the run's directory), start time and, once done, a summary
(questions, dropped, excluded, failed, the model names the endpoint reported,
the protocol each question used).  Resuming with settings that change what is
measured (another model, dataset, split, language, knowledge base, prompt,
gold source, number comparison, KQA Pro setting or example store) would
silently mix two experiments in one set of results, so it is refused unless
forced; a forced part keeps its own settings, and each result line names its
part.  Names are not enough: each part also records a fingerprint of what
decides its results (:mod:`harness.fingerprints`: the questions' text and
gold, the graph's content, the profile, the prompts as rendered for the
graph, the model and its settings, the example store), and a part whose
fingerprint differs from the last one's is refused too, naming the parts.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.parse
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.fingerprints import differences

#: Settings that change what a run measures; a part may differ from earlier parts in these only with --force.
#: (The fingerprint, :mod:`harness.fingerprints`, covers their content.)
MEASURED = ("dataset", "split", "language", "model", "kb", "prompt", "baseline", "gold", "numbers", "setting",
            "examples", "example_ranking")

#: The measured settings whose change already explains a fingerprint part's (a refusal names the setting alone).
EXPLAINED_BY = {"questions": ("dataset", "split", "language"), "graph": ("kb",), "profile": ("kb",),
                "prompts": ("prompt", "kb", "baseline"), "model": ("model", "baseline"),
                "examples": ("examples", "example_ranking")}


#: The project's checkout, when the code runs from one (its commit is recorded with each part).
ROOT = Path(__file__).resolve().parent.parent


def endpoint(base_url: str | None) -> str:
    """Where the model was asked, without credentials (``user:password@``) or a query string."""
    if not base_url:
        return "the OpenAI API (default endpoint)"
    parts = urllib.parse.urlsplit(base_url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    return urllib.parse.urlunsplit((parts.scheme, netloc + (f":{parts.port}" if parts.port else ""), parts.path,
                                    "", ""))


def code_version() -> dict[str, Any]:
    """The checkout's commit and whether it had uncommitted changes; the package version outside a checkout."""
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10)
        status = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        commit = status = None
    if commit is not None and status is not None and commit.returncode == 0 and status.returncode == 0:
        return {"commit": commit.stdout.strip(), "uncommitted_changes": bool(status.stdout.strip())}
    try:
        return {"version": metadata.version("spinach-bot")}
    except metadata.PackageNotFoundError:
        return {"version": "unknown"}


def portable_path(path: str | Path | None, out_dir: Path) -> str | None:
    """*path* as ``run.json`` records it: relative to the run's directory, so the record names no directory of
    the machine that made it and still finds a store moved together with the run."""
    if path is None:
        return None
    return os.path.relpath(Path(path).resolve(), Path(out_dir).resolve())


#: Settings that are paths, recorded relative to the run's directory (earlier, as given on the command line).
PATHS = ("kb", "examples", "questions")


def _same(key: str, previous: Any, now: Any, out_dir: Path) -> bool:
    """Whether a measured setting is unchanged; a path recorded as given (before paths were recorded relative to
    the run) is the same when it names the same place."""
    if previous == now or key not in PATHS or not isinstance(previous, str) or not isinstance(now, str):
        return previous == now
    here = (Path(out_dir) / now).resolve()
    return here in ((Path(out_dir) / previous).resolve(), Path(previous).resolve())


class RunMismatch(ValueError):
    """Resuming would mix runs made with different settings; the message says which and how to proceed."""


def read_run_info(out_dir: Path) -> dict[str, Any]:
    """The directory's ``run.json`` (an older one without parts becomes a one-part record); ``{}`` when absent."""
    path = out_dir / "run.json"
    if not path.exists():
        return {}
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"{path} is not valid JSON ({error}); move it aside or use a new --out directory") from error
    if "parts" not in info:
        info = {**info, "parts": [{"settings": {key: info[key] for key in MEASURED if key in info}}]}
    return info


def _write(out_dir: Path, info: dict[str, Any]) -> None:
    path = out_dir / "run.json"
    temporary = path.with_name("run.json.tmp")
    temporary.write_text(json.dumps(info, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, path)


def begin_part(out_dir: Path, settings: dict[str, Any], started_at: str, force: bool = False) -> int:
    """Record a new part run with *settings*; return its index.

    Raises :class:`RunMismatch` when an earlier part was run with other
    measured settings, unless *force*.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    info = read_run_info(out_dir)
    parts = info.get("parts", [])
    if parts and not force:
        previous = parts[-1]["settings"]
        named = [key for key in MEASURED
                 if key in previous and not _same(key, previous[key], settings.get(key), out_dir)]
        changed = [f"another {key} {previous[key]!r} (now {settings.get(key)!r})" for key in named]
        content = differences(previous.get("fingerprint"), settings.get("fingerprint"),
                              tuple(part for part, keys in EXPLAINED_BY.items() if not set(named) & set(keys)))
        if content:
            changed.append("other " + ", ".join(content))
        if changed:
            raise RunMismatch(f"{out_dir} holds a run made with " + ", ".join(changed)
                              + "; use a new --out directory, or --force to add a part with these settings "
                                "(each result line names its part)")
    parts.append({"settings": settings, "started_at": started_at})
    _write(out_dir, {**settings, "parts": parts})
    return len(parts) - 1


def finish_part(out_dir: Path, part: int, summary: dict[str, Any]) -> None:
    """Store what part *part* ended with (counts of questions, dropped, excluded and failed ones)."""
    info = read_run_info(out_dir)
    info["parts"][part]["summary"] = summary
    _write(out_dir, info)
