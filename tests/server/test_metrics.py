from __future__ import annotations

import pytest

from voxserve.runtime import Runtime
from voxserve.server.metrics import Metrics
from voxserve.server.runtime_api import RuntimeLike
from voxserve.types import SchedulerStats

from .support import RunningServer


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    """This module's servers speak with the fake engines: what is checked is the protocol, not the sound."""
    return fake_runtime


def test_each_app_has_its_own_registry() -> None:
    first, second = Metrics(), Metrics()
    first.count("http", "/v1/audio/speech", 200)
    first.observe_stream("piper", "v", "ws", ttfa_s=0.12, audio_s=2.0, compute_s=0.2)
    first.on_admission(3, 1, 0.75)
    first.watch_load(lambda: 0.5)
    text = first.render().decode()
    assert 'voxserve_requests_total{route="/v1/audio/speech",status="200",transport="http"} 1.0' in text
    assert 'voxserve_time_to_first_audio_seconds_count{engine="piper",transport="ws",voice="v"} 1.0' in text
    assert 'voxserve_real_time_factor_sum{engine="piper",transport="ws",voice="v"} 0.1' in text
    assert "voxserve_active_streams 3.0" in text and "voxserve_queue_depth 1.0" in text
    assert "voxserve_load 0.5" in text and "voxserve_admission_limit 0.75" in text
    assert "process_resident_memory_bytes" in text
    assert "voxserve_requests_total{" not in second.render().decode()


def test_the_worker_pool_is_read_at_each_scrape() -> None:
    metrics = Metrics()
    now = [SchedulerStats(running=2, queued=3, preemptions=5, playing_margin_s=0.25, core_factor=1.5)]
    metrics.watch_scheduler(lambda: now[0])
    text = metrics.render().decode()
    assert "voxserve_worker_jobs_running 2.0" in text and "voxserve_worker_jobs_queued 3.0" in text
    assert "voxserve_preemptions_total 5.0" in text and "voxserve_core_factor 1.5" in text
    assert "voxserve_playing_margin_seconds 0.25" in text
    now[0] = SchedulerStats(running=0, queued=0, preemptions=6, core_factor=1.75)
    text = metrics.render().decode()
    assert "voxserve_preemptions_total 6.0" in text and "voxserve_core_factor 1.75" in text


def test_a_running_server_exports_its_runtimes_pool(server: RunningServer, shared_runtime: Runtime) -> None:
    assert server.metric("voxserve_preemptions_total") == float(shared_runtime.pool.preemptions)
    assert server.metric("voxserve_core_factor") == shared_runtime.core_factor
    assert server.metric("voxserve_playing_margin_seconds") == shared_runtime.pool.margin.margin_s
