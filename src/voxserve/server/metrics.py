"""Prometheus metrics of one app, in a registry of its own (several apps may share a process)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import psutil
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from voxserve.types import SchedulerStats

_TTFA_BUCKETS = (0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
_STALL_BUCKETS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
_RTF_BUCKETS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0)
_LABELS = ("engine", "voice", "transport")

CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.ttfa = Histogram(
            "voxserve_time_to_first_audio_seconds",
            "Time from request (or first text) to the first audio chunk.",
            _LABELS,
            buckets=_TTFA_BUCKETS,
            registry=r,
        )
        self.rtf = Histogram(
            "voxserve_real_time_factor", "Compute seconds per audio second.", _LABELS, buckets=_RTF_BUCKETS, registry=r
        )
        self.requests = Counter(
            "voxserve_requests",
            "Requests by outcome.",
            ("transport", "route", "status"),
            registry=r,
        )
        self.stalled_streams = Counter(
            "voxserve_stalled_streams",
            "Streams whose listener, playing from the first audio in real time, ran out of audio at least once.",
            ("engine", "transport"),
            registry=r,
        )
        self.stall_seconds = Histogram(
            "voxserve_stall_seconds",
            "Seconds each stream's listener would have waited after its first audio (0 for most).",
            ("engine", "transport"),
            buckets=_STALL_BUCKETS,
            registry=r,
        )
        self.active_streams = Gauge("voxserve_active_streams", "Synthesis streams running now.", registry=r)
        self.queue_depth = Gauge("voxserve_queue_depth", "Requests waiting for a stream slot.", registry=r)
        self.load = Gauge(
            "voxserve_load",
            "Booked shares of the running streams against the admission limit, or streams against max_streams "
            "when that is fuller (1 = full: no more fit).",
            registry=r,
        )
        self.admission_limit = Gauge(
            "voxserve_admission_limit",
            "Share of the cores admission books streams up to now: learned from stalls, at most max_load.",
            registry=r,
        )
        self.audio_seconds = Counter(
            "voxserve_audio_seconds", "Seconds of audio produced.", ("engine", "voice", "transport"), registry=r
        )
        self.model_load_seconds = Gauge("voxserve_model_load_seconds", "Model load + warm-up time.", registry=r)
        self.ready = Gauge("voxserve_ready", "1 when models are loaded and the server accepts work.", registry=r)
        # process_resident_memory_bytes, process_cpu_seconds_total, open fds … (Linux /proc).
        ProcessCollector(registry=r)
        # OS threads of the process (ONNX Runtime's pools included): the soak watches it for leaks
        threads = Gauge("voxserve_threads", "Threads of the server process.", registry=r)
        threads.set_function(lambda: psutil.Process().num_threads())

    def watch_scheduler(self, read: Callable[[], SchedulerStats]) -> None:
        """Export the worker pool's state, read at each scrape."""
        self.registry.register(_SchedulerCollector(read))

    def on_admission(self, active: int, queued: int, limit: float) -> None:
        self.active_streams.set(active)
        self.queue_depth.set(queued)
        self.admission_limit.set(limit)

    def watch_load(self, read: Callable[[], float]) -> None:
        """Export the load as ``read`` gives it at each scrape: the running streams are priced again as
        costs are learned, with no admission event to tell."""
        self.load.set_function(read)

    def observe_stream(
        self,
        engine: str,
        voice: str,
        transport: str,
        ttfa_s: float | None,
        audio_s: float,
        compute_s: float,
        stall_s: float = 0.0,
    ) -> None:
        if ttfa_s is not None:
            self.ttfa.labels(engine, voice, transport).observe(ttfa_s)
        if audio_s > 0:
            self.rtf.labels(engine, voice, transport).observe(compute_s / audio_s)
            self.audio_seconds.labels(engine, voice, transport).inc(audio_s)
            self.stall_seconds.labels(engine, transport).observe(stall_s)
            stalled = self.stalled_streams.labels(engine, transport)  # 0 until the first stall, not absent
            if stall_s > 0:
                stalled.inc()

    def count(self, transport: str, route: str, status: str | int) -> None:
        self.requests.labels(transport, route, str(status)).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _SchedulerCollector:
    def __init__(self, read: Callable[[], SchedulerStats]) -> None:
        self._read = read

    def describe(self) -> list[Metric]:
        return []  # not known before the first scrape: the registry must not call collect() early

    def collect(self) -> Iterator[Metric]:
        stats = self._read()
        yield GaugeMetricFamily("voxserve_worker_jobs_running", "Model jobs running on the worker pool.", stats.running)
        yield GaugeMetricFamily(
            "voxserve_worker_jobs_queued", "Model jobs waiting for a worker or a core.", stats.queued
        )
        yield CounterMetricFamily(
            "voxserve_preemptions",
            "Model calls stopped to give their cores to a stream's first audio (each made again later).",
            stats.preemptions,
        )
        yield GaugeMetricFamily(
            "voxserve_playing_margin_seconds",
            "How long before its listener runs dry a playing stream's work is due: a new stream's first "
            "job on a core plus how late a playing job's audio arrives against its learned cost (high "
            "quantiles of the last jobs).",
            stats.playing_margin_s,
        )
        yield GaugeMetricFamily(
            "voxserve_core_factor",
            "Core-seconds the streams' jobs really hold per core-second their learned window costs book "
            "(admission scales every stream's share by it; 1 until measured under load).",
            stats.core_factor,
        )
