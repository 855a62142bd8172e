"""The suite's own scheduling: the tests of one ``xdist_group`` share a worker.

The suite relies on it (``setup.cfg``: ``--dist=loadgroup``): a hostile-corpus
page, the upstream replay, a module's MediaWiki pages are made once, by the
worker that runs every test reading them.  When pytest-xdist cannot mark a
test's node ID with its group (pytest 9.2 names tests by a field pytest-xdist
3.8 does not set), nothing fails; every group is silently split across the
workers and each of them makes the shared work again.  So a small suite is run
the way ours is, and where each test ran is read back.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GROUPED = '''
import os

import pytest


@pytest.mark.parametrize("number", range(8))
@pytest.mark.xdist_group("shared")
def test_in_the_group(number):
    with open(os.environ["WHERE"], "a") as where:
        where.write(f"{os.environ['PYTEST_XDIST_WORKER']} shared\\n")


@pytest.mark.parametrize("number", range(8))
def test_alone(number):
    with open(os.environ["WHERE"], "a") as where:
        where.write(f"{os.environ['PYTEST_XDIST_WORKER']} alone\\n")
'''


def test_the_tests_of_one_xdist_group_run_on_one_worker(tmp_path: Path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    where = tmp_path / "where.txt"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--numprocesses=2",
                           "--dist=loadgroup", "--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini"),
                           str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "WHERE": str(where)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    runs = [line.split() for line in where.read_text().splitlines()]
    assert len(runs) == 16
    workers = {worker for worker, kind in runs if kind == "shared"}
    assert len(workers) == 1, f"the group's 8 tests ran on {sorted(workers)}: pytest and pytest-xdist disagree " \
                              "on how a test's node ID is kept"
