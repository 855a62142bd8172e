"""Downloads from a loopback mirror: checksums, no partial files, nothing fetched twice; KQA Pro's resumable archive."""

import hashlib
import io
import re
import zipfile
from dataclasses import replace
from http.server import BaseHTTPRequestHandler

import pytest

from scripts.download_datasets import KQAPRO, SOURCES, DownloadError, download, download_archive
from tests.support.loopback import LoopbackServer
from tests.support.paths import FIXTURES


@pytest.fixture
def mirror(shared_dir):
    served = {f"/{source.location}": (shared_dir / "datasets" / source.target).read_bytes() for source in SOURCES}
    hits = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            hits.append(self.path)
            body = served.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

    server = LoopbackServer(Handler)
    yield server.base, served, hits
    server.close()


def test_every_file_arrives_checked_and_is_not_fetched_twice(mirror, tmp_path):
    base, served, hits = mirror
    written = download(tmp_path, base, show=lambda line: None)
    assert len(written) == len(SOURCES)
    for source in SOURCES:
        assert hashlib.sha256((tmp_path / source.target).read_bytes()).hexdigest() == source.sha256
    download(tmp_path, base, show=lambda line: None)
    assert len(hits) == len(SOURCES)


def test_a_corrupt_file_is_refused_and_nothing_is_left(mirror, tmp_path):
    base, served, hits = mirror
    served[f"/{SOURCES[0].location}"] = b"[]"
    with pytest.raises(DownloadError, match="checksum mismatch"):
        download(tmp_path, base, show=lambda line: None)
    assert not (tmp_path / SOURCES[0].target).exists()
    assert not list(tmp_path.rglob("*.part"))


# -- KQA Pro: one archive, resumable, checked before anything is written -----------------------------------

KQAPRO_FIXTURES = FIXTURES / "kqapro"
#: The fixture's own question counts stand for the paper's.
FIXTURE_RELEASE = replace(KQAPRO, questions={"train.json": 3, "val.json": 30, "test.json": 4})


def release_zip(corrupt: bool = False) -> bytes:
    """The fixture release as its authors ship it: one zip, the files in a folder."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED if corrupt else zipfile.ZIP_DEFLATED) as archive:
        for name in ("kb.json", "train.json", "val.json", "test.json"):
            archive.writestr(f"KQAPro/{name}", (KQAPRO_FIXTURES / name).read_bytes())
    data = buffer.getvalue()
    if corrupt:  # one byte of val.json changed: its CRC-32 no longer holds
        offset = data.index(b"KQAPro/val.json") + len("KQAPro/val.json") + 40
        data = data[:offset] + bytes([data[offset] ^ 0xFF]) + data[offset + 1:]
    return data


@pytest.fixture
def share():
    """The authors' file share on loopback: ranges, answers scripted per request, the connection cut at will."""
    state = {"body": release_zip(), "script": [], "requests": []}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            state["requests"].append(self.headers.get("Range"))
            status, cut, retry_after = state["script"].pop(0) if state["script"] else (200, None, None)
            body = state["body"]
            start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
            if status != 200:
                self.send_response(status)
                if retry_after is not None:
                    self.send_header("Retry-After", str(retry_after))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206 if start else 200)
            self.send_header("Content-Length", str(len(body) - start))
            self.end_headers()
            self.wfile.write(body[start:cut])
            self.wfile.flush()
            self.close_connection = True

    server = LoopbackServer(Handler)
    state["url"] = f"{server.base}/f/04ce81541e704a648b03/?dl=1"
    yield state
    server.close()


def fetch_release(share, data, release=FIXTURE_RELEASE, lines=None):
    return download_archive(data, release, share["url"], show=(lines if lines is not None else []).append,
                            backoff=0.01, progress=False)


def test_the_release_arrives_checked_with_its_checksums_recorded(share, tmp_path):
    written = fetch_release(share, tmp_path)
    assert [path.name for path in written] == ["train.json", "val.json", "test.json", "kb.json"]
    for path in written:
        assert path.read_bytes() == (KQAPRO_FIXTURES / path.name).read_bytes()
    sums = (tmp_path / "kqapro" / "SHA256SUMS").read_text().splitlines()
    assert sums[0] == f"{hashlib.sha256(share['body']).hexdigest()}  KQAPro.zip"
    assert f"{hashlib.sha256((KQAPRO_FIXTURES / 'kb.json').read_bytes()).hexdigest()}  kb.json" in sums
    assert sorted(path.name for path in (tmp_path / "kqapro").iterdir()) == [
        "SHA256SUMS", "kb.json", "test.json", "train.json", "val.json"]
    lines = []
    fetch_release(share, tmp_path, lines=lines)
    assert len(share["requests"]) == 1 and "already here (checked against SHA256SUMS)" in lines[0]


def test_a_broken_connection_says_where_it_stopped_and_the_next_run_continues_there(share, tmp_path):
    share["script"] = [(200, 3000, None)] + [(503, None, None)] * 4
    with pytest.raises(DownloadError) as stopped:
        fetch_release(share, tmp_path)
    total = len(share["body"])
    assert str(stopped.value) == (
        f"{share['url']}: stopped after 3,000 of {total:,} bytes (HTTP 503); the 3,000 bytes are kept in "
        f"{tmp_path / 'kqapro' / 'KQAPro.zip.part'} and the next run continues from there")
    assert not (tmp_path / "kqapro" / "val.json").exists()
    share["requests"].clear()
    fetch_release(share, tmp_path)
    assert share["requests"] == ["bytes=3000-"]
    assert (tmp_path / "kqapro" / "val.json").read_bytes() == (KQAPRO_FIXTURES / "val.json").read_bytes()


def test_a_cut_connection_is_resumed_and_a_busy_server_waited_for(share, tmp_path):
    share["script"] = [(429, None, 0), (200, 2000, None), (200, 5000, None)]
    lines = []
    fetch_release(share, tmp_path, lines=lines)
    assert share["requests"] == [None, None, "bytes=2000-", "bytes=5000-"]
    assert any("HTTP 429: trying again in 0 s from byte 0" in line for line in lines)
    assert (tmp_path / "kqapro" / "kb.json").read_bytes() == (KQAPRO_FIXTURES / "kb.json").read_bytes()


def test_an_unreachable_share_says_nothing_was_downloaded(tmp_path):
    with pytest.raises(DownloadError, match=r"stopped after 0 bytes \(.*\); nothing was downloaded"):
        download_archive(tmp_path, FIXTURE_RELEASE, "http://127.0.0.1:9/kqapro.zip", show=lambda line: None,
                         backoff=0.01, progress=False)


@pytest.mark.parametrize("change, message", [
    (lambda share: share.update(body=release_zip(corrupt=True)), "Bad CRC-32 for file 'KQAPro/val.json'"),
    (lambda share: share.update(body=b"<html>please log in</html>"), "File is not a zip file"),
    (lambda share: None, "train.json in the archive holds 3 questions; the release has 94,376"),
])
def test_a_wrong_archive_is_refused_and_nothing_is_left(share, tmp_path, change, message):
    change(share)
    release = KQAPRO if "94,376" in message else FIXTURE_RELEASE
    with pytest.raises(DownloadError, match=re.escape(message)):
        fetch_release(share, tmp_path, release)
    assert list((tmp_path / "kqapro").iterdir()) == []


def test_a_pinned_checksum_is_enforced(share, tmp_path):
    with pytest.raises(DownloadError, match="KQAPro.zip: checksum mismatch"):
        fetch_release(share, tmp_path, replace(FIXTURE_RELEASE, sha256="0" * 64))
    assert list((tmp_path / "kqapro").iterdir()) == []
