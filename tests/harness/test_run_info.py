"""``run.json``: paths that travel with the run, and resuming a run recorded with paths as they were given."""

import json

import pytest

from harness.run_info import RunMismatch, begin_part, portable_path


def test_paths_are_recorded_relative_to_the_run(tmp_path):
    assert portable_path(tmp_path / "stores" / "kqapro", tmp_path / "runs" / "val") == "../../stores/kqapro"
    assert portable_path(None, tmp_path) is None


def test_a_run_recorded_with_the_path_as_given_resumes_with_the_same_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stores" / "kqapro").mkdir(parents=True)
    out = tmp_path / "runs" / "val"
    out.mkdir(parents=True)
    settings = {"dataset": "kqapro", "split": "val", "model": "m", "kb": "stores/kqapro"}  # as an older run wrote it
    (out / "run.json").write_text(json.dumps({**settings, "parts": [{"settings": settings}]}))
    assert begin_part(out, {**settings, "kb": portable_path("stores/kqapro", out)}, "now") == 1
    (tmp_path / "stores" / "other").mkdir()
    with pytest.raises(RunMismatch, match="another kb '../../stores/kqapro' \\(now '../../stores/other'\\)"):
        begin_part(out, {**settings, "kb": portable_path("stores/other", out)}, "now")
