"""The server's phases: loading → ready → draining, and the model loading that moves it along."""

from __future__ import annotations

import asyncio
import enum
import gc
import logging
import time

from voxserve.errors import NotReady, ShuttingDown
from voxserve.server.metrics import Metrics
from voxserve.server.runtime_api import RuntimeLike

log = logging.getLogger("voxserve.server")


def settle_heap() -> None:
    """Collect what loading left behind, then exempt every object alive now from later collections.

    Loading leaves hundreds of thousands of long-lived Python objects (vocabularies, lexicons, voice
    tables, graph metadata). Python's full collection walks all of them, with the interpreter lock held,
    every time enough new objects survive: a pause in which no stream's audio moves, long enough to run
    listeners with little audio ahead dry. Frozen, they are never walked again, so the full collections
    that serving triggers walk only what serving made. They are still freed when nothing refers to them."""
    gc.collect()
    gc.freeze()


class Phase(enum.Enum):
    LOADING = "loading"
    READY = "ready"
    DRAINING = "draining"
    FAILED = "failed"


class Lifecycle:
    def __init__(self, metrics: Metrics) -> None:
        self.phase = Phase.LOADING
        self.error: str | None = None
        self._metrics = metrics
        self._loaded = asyncio.Event()

    @property
    def ready(self) -> bool:
        return self.phase is Phase.READY

    def require_ready(self) -> None:
        if self.phase is Phase.DRAINING:
            raise ShuttingDown("server is shutting down", retry_after_s=5.0)
        if self.phase is Phase.FAILED:
            raise NotReady(f"models failed to load: {self.error}")
        if self.phase is not Phase.READY:
            raise NotReady("models are still loading; retry shortly", retry_after_s=2.0)

    async def load(self, runtime: RuntimeLike) -> None:
        """Load and warm the models in a worker thread, then mark the server ready."""
        start = time.perf_counter()
        try:
            await asyncio.to_thread(runtime.load)
        except Exception as exc:  # the server stays up (liveness), readiness reports the failure
            self.phase = Phase.FAILED
            self.error = str(exc)
            log.exception("model loading failed")
            return
        finally:
            self._loaded.set()
        settle_heap()
        elapsed = time.perf_counter() - start
        self._metrics.model_load_seconds.set(elapsed)
        if self.phase is Phase.LOADING:
            self.phase = Phase.READY
            self._metrics.ready.set(1)
        log.info("models loaded and warmed in %.2f s", elapsed)

    async def wait_loaded(self) -> None:
        await self._loaded.wait()

    def start_draining(self) -> None:
        self.phase = Phase.DRAINING
        self._metrics.ready.set(0)
