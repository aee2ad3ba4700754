"""Everything one server instance holds, shared by its HTTP/WebSocket app and its gRPC server."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from voxserve.client.waits import within
from voxserve.errors import ShuttingDown
from voxserve.server.admission import Admission
from voxserve.server.auth import Authenticator
from voxserve.server.lifecycle import Lifecycle
from voxserve.server.metrics import Metrics
from voxserve.server.ratelimit import RateLimiter
from voxserve.server.runtime_api import RuntimeLike
from voxserve.server.service import SpeechService
from voxserve.settings import Settings

log = logging.getLogger("voxserve.server")
_TOLD_WITHIN_S = 2.0  # after the grace period: how long cut streams get to end and their clients to be told


class Connection(Protocol):
    """An open connection a drain waits for (a WebSocket): ``quiet`` when no audio or event of it is
    on its way, so closing it now loses nothing the client was owed."""

    @property
    def quiet(self) -> bool: ...


@dataclass
class ServerState:
    """The one holder of what a server instance shares: every transport, the service and the utterances
    reach the settings, runtime, metrics, phases, admission, rate limits and credentials through it."""

    settings: Settings
    runtime: RuntimeLike
    metrics: Metrics
    lifecycle: Lifecycle
    admission: Admission
    limiter: RateLimiter
    authenticator: Authenticator
    drain_hooks: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    connections: set[Connection] = field(default_factory=set)
    service: SpeechService = field(init=False)

    def __post_init__(self) -> None:
        self.service = SpeechService(self)

    @classmethod
    def build(cls, settings: Settings, runtime: RuntimeLike | None = None) -> ServerState:
        if runtime is None:
            from voxserve.runtime import Runtime  # heavy: only when the caller did not supply one

            runtime = Runtime(settings)
        metrics = Metrics()
        metrics.watch_scheduler(runtime.scheduler_stats)
        lifecycle = Lifecycle(metrics)
        admission = Admission.from_settings(settings, on_change=metrics.on_admission)
        metrics.watch_load(lambda: admission.load)
        limiter = RateLimiter(settings.rate_limit_per_minute)
        return cls(settings, runtime, metrics, lifecycle, admission, limiter, Authenticator(settings))

    async def drain(self) -> None:
        """Stop taking work (readyz → 503), let streams finish within the grace period, cancel the rest,
        then wait (briefly) until every connection has sent what it owes: the audio already made and
        the event saying why it ended. Only then may the web server close what is left."""
        self.lifecycle.start_draining()
        self.admission.start_draining()
        for hook in self.drain_hooks:
            await hook()
        grace = self.settings.shutdown_grace_s
        try:
            await within(self.admission.wait_idle(), grace)
        except TimeoutError:
            cut = ShuttingDown("server is shutting down: the stream was cut at the end of the grace period")
            cancelled = self.service.cancel_all(cut)
            log.warning("shutdown grace of %.1f s over: cancelled %d stream(s)", grace, cancelled)
        loop = asyncio.get_running_loop()
        until = loop.time() + _TOLD_WITHIN_S
        with contextlib.suppress(TimeoutError):
            await within(self.admission.wait_idle(), _TOLD_WITHIN_S)
        while any(not connection.quiet for connection in self.connections) and loop.time() < until:
            await asyncio.sleep(0.02)
