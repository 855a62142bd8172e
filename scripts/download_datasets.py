"""Fetch the evaluation datasets from their public sources, checking each file's SHA-256.

    python -m scripts.download_datasets [--data data]

Files are pinned to a commit of their repository, so a checksum mismatch means
a broken download, never an upstream edit.  A file is written only once its
whole content is checked: an interrupted or corrupt download leaves nothing
behind, and files already present and intact are not fetched again.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from agent.kb.http import retry_after_seconds, user_agent

GITHUB = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class Source:
    target: str
    #: repository/commit/path under the download base.
    location: str
    sha256: str
    licence: str


SOURCES = (
    Source("spinach/dev.json", "stanford-oval/spinach/2142ebce539146c688b4f0f927fa42641fa11572/spinach_dataset/dev.json",  # noqa: E501
           "e4a590e05b0fc00e7dddc1ac0a6253f134d8eb52d9ab5930ad4add3096e2ef86", "CC BY-SA 4.0"),
    Source("spinach/test.json", "stanford-oval/spinach/2142ebce539146c688b4f0f927fa42641fa11572/spinach_dataset/test.json",  # noqa: E501
           "a09977abb588b8893b8deb3a3d32854d3aeff1f2be869c3956a454c93c4c9b05", "CC BY-SA 4.0"),
    Source("qald7/test.json", "stanford-oval/spinach/785e1f9e8240990ffdf76d831054df06e91d880f/datasets/qald_7_task4/test.json",  # noqa: E501
           "3563f27215385e8315b5e697236acb9b5033e0c01412dd30ff9f746bce737066", "Apache-2.0"),
    Source("qald9plus/test.json", "stanford-oval/spinach/42a833e30d75898d1d3852f58177a453d72919d5/datasets/qald_9_plus/en/test.json",  # noqa: E501
           "6cec76a01ae794d2c0c945128c6fbb4f53b73f9c8c600d888eed385d227e028c", "CC BY 4.0"),
    Source("qald9plus/train.json", "stanford-oval/spinach/42a833e30d75898d1d3852f58177a453d72919d5/datasets/qald_9_plus/en/train.json",  # noqa: E501
           "647da889372222f2388850c845c109286685adcf070d1d1cb0a78ca1aa069ad8", "CC BY 4.0"),
    Source("qald10/qald_10.json", "KGQA/QALD-10/def69748d4baa8f2cfb4be2ac7455d0cd1932a26/data/qald_10/qald_10.json",
           "55720cbc9effb250f4b814a9c27ce5f5d61d863d5943bc8aa93773f6f761c6cc", "MIT"),
    Source("wikiwebquestions/dev.json", "stanford-oval/wikidata-emnlp23/b9b8f237efa5bc9dcfcdf1859f308f42cd6f3d71/WikiWebQuestions/dev.json",  # noqa: E501
           "4506d857098e7f66cb477ad54988e557296fa91cf9d31a34df8ec301e60f7ca8", "CC BY-SA 4.0"),
    Source("wikiwebquestions/test.json", "stanford-oval/spinach/394ebfe904f584b75ad908228ff1bdf3c0a8ac69/datasets/wikiwebquestions/test.json",  # noqa: E501
           "573ab402b8a3aed9c0148c84714274b98df886f3ab1654c37163cc0350270790", "Apache-2.0"),
)


class DownloadError(RuntimeError):
    pass


def fetch(url: str, session: requests.Session, timeout: float = 60.0, retries: int = 4) -> bytes:
    for attempt in range(retries + 1):
        try:
            response = session.get(url, timeout=timeout)
        except requests.RequestException as error:
            if attempt == retries:
                raise DownloadError(f"{url}: {error}") from error
            time.sleep(2 ** attempt)
            continue
        if response.status_code in (429, 500, 502, 503, 504) and attempt < retries:
            wait = retry_after_seconds(response.headers.get("Retry-After"))
            time.sleep(min(120.0, wait if wait is not None else 2 ** attempt))
            continue
        if response.status_code != 200:
            raise DownloadError(f"{url}: HTTP {response.status_code}")
        return response.content
    raise DownloadError(f"{url}: no answer after {retries + 1} tries")


def download(data_dir: Path, base_url: str = GITHUB, show=print) -> list[Path]:
    """Every dataset file into *data_dir*, checked; returns the files written or already intact."""
    session = requests.Session()
    session.headers["User-Agent"] = user_agent("dataset download")
    written = []
    for number, source in enumerate(SOURCES, 1):
        target = data_dir / source.target
        if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == source.sha256:
            show(f"[{number}/{len(SOURCES)}] {source.target}: already here")
            written.append(target)
            continue
        show(f"[{number}/{len(SOURCES)}] {source.target} ({source.licence}) ...")
        content = fetch(f"{base_url.rstrip('/')}/{source.location}", session)
        digest = hashlib.sha256(content).hexdigest()
        if digest != source.sha256:
            raise DownloadError(f"{source.target}: checksum mismatch (got {digest}, expected {source.sha256}); "
                                "nothing was written")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(target.suffix + ".part")
        partial.write_bytes(content)
        partial.replace(target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.download_datasets", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("data"), help="where to put them (default: data)")
    parser.add_argument("--base-url", default=GITHUB, help="a mirror of the raw repository files")
    args = parser.parse_args(argv)
    try:
        download(args.data, args.base_url)
    except DownloadError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
