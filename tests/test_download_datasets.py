"""Downloads from a loopback mirror: checksums, no partial files, nothing fetched twice."""

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scripts.download_datasets import SOURCES, DownloadError, download


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

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", served, hits
    server.shutdown()


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
