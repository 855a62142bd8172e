"""A regular install runs: the wheel carries its templates, its console scripts and its declared imports.

The wheel is built from a copy of the build files and packages of the working
tree (a stale ``build/`` in the checkout could otherwise slip old modules in,
and run outputs or stores need not be copied), installed into a fresh venv
outside the checkout, and run from a directory that holds no source.  The
installed packages' third-party dependencies are taken, offline, from this
project's own venv through a ``.pth`` line (no ``--system-site-packages``), so
every project module the scripts import comes from the wheel; a separate test
checks that every third-party import is declared in ``setup.cfg``.
"""

from __future__ import annotations

import ast
import configparser
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from agent.cli import EVAL_PACKAGES
from tests.support.paths import ROOT
#: One test process runs them all: they share one built wheel.
pytestmark = pytest.mark.xdist_group("wheel")
CONSOLE_SCRIPTS = ("spinach-bot", "spinach-agent", "spinach-eval", "spinach-kb", "spinach-examples", "spinach-report",
                   "spinach-replay", "spinach-serve")
PACKAGES = ("agent", "bot", "harness", "prompts", "scripts", "serve")
#: The project's own packages that only a checkout has: the tests' stand-ins, which a benchmark run from a checkout
#: starts (and which, installed from the wheel, it says in one line that it needs).
CHECKOUT_ONLY = ("tests",)
#: Packages that run only with an extra installed, and that extra.
EXTRA_ONLY = {"harness": "eval", "scripts": "eval", "serve": "serve"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed; returns its bin directory."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md"):  # what the build reads, and the packages
        shutil.copy2(ROOT / name, source / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist"),
                            str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    [wheel] = (work / "dist").glob("*.whl")
    environment = work / "venv"
    venv.create(environment, with_pip=False)
    site_packages = Path(sysconfig.get_path("purelib", vars={"base": str(environment),
                                                              "platbase": str(environment)}))
    project_site = Path(sysconfig.get_path("purelib"))
    (site_packages / "zz_dependencies.pth").write_text(f"{project_site}\n")
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(environment / "bin" / "python"), "install",
                          "--no-deps", "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    return environment / "bin"


@pytest.fixture(scope="module")
def plain(installed) -> Path:
    """The same wheel in a venv whose dependencies lack the ``[eval]`` extra's packages (the README's plain
    install); returns its bin directory."""
    work = installed.parent.parent
    environment, dependencies = work / "plain", work / "plain-dependencies"
    dependencies.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        if re.split(r"[-_.]", entry.name)[0].lower() not in EVAL_PACKAGES:
            (dependencies / entry.name).symlink_to(entry)
    venv.create(environment, with_pip=False)
    site_packages = Path(sysconfig.get_path("purelib", vars={"base": str(environment),
                                                              "platbase": str(environment)}))
    (site_packages / "zz_dependencies.pth").write_text(f"{dependencies}\n")
    [wheel] = (work / "dist").glob("*.whl")
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(environment / "bin" / "python"), "install",
                          "--no-deps", "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    return environment / "bin"


def run(bin_dir: Path, *command: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYWIKIBOT_DIR"] = str(cwd)
    return subprocess.run(list(command), cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          timeout=120)


def test_the_wheel_ships_templates_and_console_scripts(installed):
    [wheel] = installed.parent.parent.glob("dist/*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for template in [*Path(ROOT, "prompts").glob("*.j2"), *Path(ROOT, "bot", "templates").glob("*.j2")]:
        assert template.relative_to(ROOT).as_posix() in names
    assert "harness/prices.json" in names
    assert {"serve/static/chat.html", "serve/static/chat.js", "serve/static/chat.css"} <= set(names)
    assert {"agent/profiles/wikidata.toml", "agent/profiles/kqapro.toml"} <= set(names)
    assert not any(name.startswith("tests/") for name in names)
    for script in CONSOLE_SCRIPTS:
        assert (installed / script).exists(), script


def test_the_wheel_leaves_the_benchmarks_to_the_checkout(installed):
    [wheel] = installed.parent.parent.glob("dist/*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert not [name for name in names if Path(name).name.startswith("bench_")]
    checkout = {path.relative_to(ROOT).as_posix() for path in (ROOT / "scripts").glob("*.py")}
    assert checkout - names == {name for name in checkout if Path(name).name.startswith("bench_")}
    done = run(installed, "spinach-eval", "--help", cwd=installed)
    assert done.returncode == 0 and "usage: spinach-eval" in done.stdout, done.stderr
    missing = run(installed, "python", "-m", "scripts.bench_metrics", "--help", cwd=installed)
    assert missing.returncode == 1 and "No module named scripts.bench_metrics" in missing.stderr
    from_checkout = subprocess.run([sys.executable, "-m", "scripts.bench_metrics", "--help"], cwd=ROOT,
                                   capture_output=True, text=True, timeout=120)
    assert from_checkout.returncode == 0 and "usage:" in from_checkout.stdout, from_checkout.stderr


@pytest.mark.parametrize("script", CONSOLE_SCRIPTS)
def test_each_console_script_answers_help(installed, tmp_path, script):
    done = run(installed, script, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and "Traceback" not in done.stderr


@pytest.mark.parametrize("script", CONSOLE_SCRIPTS)
def test_without_the_eval_extra_each_console_script_helps_or_names_the_extra_in_one_line(plain, tmp_path, script):
    assert run(plain, "python", "-c", "import scipy", cwd=tmp_path).returncode == 1  # the extra is missing
    done = run(plain, script, "--help", cwd=tmp_path)
    if script in ("spinach-report", "spinach-replay"):
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == (f"error: {script} needs the [eval] extra (No module named 'scipy'): "
                               "pip install -e '.[eval]' in the project's directory\n")
    else:
        assert done.returncode == 0 and "usage:" in done.stdout and not done.stderr, done.stderr


RENDER = """
import json
import agent, bot
from agent.prompts import render, template_names
from agent.trace import AgentResult, Step
from bot.render import render_reply

result = AgentResult(
    question="Who advised Euler?",
    final_sparql="SELECT ?advisor WHERE { wd:Q7604 wdt:P184 ?advisor }",
    answer=[{"advisor": {"type": "uri", "value": "http://www.wikidata.org/entity/Q124500"}}],
    variables=["advisor"],
    steps=[Step("run it", "execute_sparql", "SELECT ?advisor WHERE { wd:Q7604 wdt:P184 ?advisor }",
                "1 row", query_status="ok", row_count=1)],
    stop_reason="stop")
from agent.graph import load_graph
print(json.dumps({"modules": [agent.__file__, bot.__file__], "templates": template_names(),
                  "graph": load_graph("kqapro").prompt.query,
                  "reply": render_reply(result), "prompt": render("baseline", question="Who advised Euler?")}))
"""


def test_an_installed_wheel_renders_a_reply_and_a_prompt(installed, tmp_path):
    done = run(installed, str(installed / "python"), "-", cwd=tmp_path, stdin=RENDER)
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert all(str(installed.parent) in module for module in output["modules"])  # not the checkout
    assert {"baseline", "policy", "prune", "question"} <= set(output["templates"])
    assert "Who advised Euler?" in output["prompt"]
    assert "wdt:P184" in output["reply"] and "~~~~" in output["reply"]
    assert output["graph"] == "a SPARQL query over the KQA Pro knowledge base"


def _third_party_imports(package: str) -> dict[str, set[str]]:
    """Top-level modules imported by each source file of *package*, outside the standard library and the project."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in PACKAGES + CHECKOUT_ONLY and top != "__future__":
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def _requirement_names(lines: str) -> set[str]:
    names = set()
    for line in lines.strip().splitlines():
        name = re.split(r"[<>=!~\[ ;]", line.strip(), maxsplit=1)[0]
        names.add(re.sub(r"[-_.]+", "-", name).lower())
    return names


def test_every_third_party_import_is_declared():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    required = _requirement_names(config["options"]["install_requires"])
    distributions = importlib.metadata.packages_distributions()
    undeclared = []
    for package in PACKAGES:
        extra = EXTRA_ONLY.get(package)
        allowed = required | (_requirement_names(config["options.extras_require"][extra]) if extra else set())
        for module, files in _third_party_imports(package).items():
            names = {re.sub(r"[-_.]+", "-", name).lower() for name in distributions.get(module, [module])}
            if not names & allowed:
                undeclared.append(f"{module} ({', '.join(sorted(files))})")
    assert not undeclared, "imported but not declared in setup.cfg: " + "; ".join(undeclared)
