"""Runtime wiring: the batching policy and the window plan it implies; what a loaded runtime has learned."""

from __future__ import annotations

from typing import cast

import pytest

from voxserve.engines.kokoro import KokoroEngine
from voxserve.engines.piper import PiperEngine
from voxserve.runtime import Runtime, batch_policy
from voxserve.settings import Settings
from voxserve.tuning import DecodeMode, Tuning
from voxserve.types import SynthesisParams


def test_batching_is_off_unless_the_operator_asks_for_it() -> None:
    assert not batch_policy(Settings(_env_file=None), Tuning()).enabled
    chosen = Settings(_env_file=None, decode_batch=8)
    policy = batch_policy(chosen, Tuning(decode_batch_wait_ms=5))
    assert policy.max_batch == 8 and policy.max_wait_s == 0.005


def test_window_plan_is_quantized_only_when_batching() -> None:
    runtime = Runtime(Settings(_env_file=None))
    plain = runtime.window_config()
    assert plain.quantum_s == 0 and plain.growth > 1
    runtime._batch = batch_policy(Settings(_env_file=None, decode_batch=4), Tuning())
    batched = runtime.window_config()
    assert batched.quantum_s > 0 and batched.growth == 1.0


def test_paced_streams_get_smaller_windows_than_files() -> None:
    """A stream played in real time keeps its windows short (a new caller waits for at most one)."""
    config = Runtime(Settings(_env_file=None)).session_config()
    assert config.max_window_s == 2.0 and Runtime(Settings(_env_file=None)).window_config().max_s == 4.0
    small = Runtime(Settings(_env_file=None), Tuning(window_max_ms=1000)).session_config()
    assert small.max_window_s == 1.0


def test_a_loaded_runtime_knows_every_kokoro_voices_statistics(runtime: Runtime) -> None:
    """Every voice's first sentence starts from its own learned decoder statistics, not other voices'."""
    kokoro = runtime.engines["kokoro"]
    assert isinstance(kokoro, KokoroEngine) and kokoro.streamer is not None
    book = kokoro.streamer.voice_stats
    assert book is not None
    assert all(book.frames_seen(voice.id) > 0 for voice in kokoro.voices())


def test_a_quick_start_reuses_the_statistics_an_earlier_start_learned(runtime: Runtime) -> None:
    """`voxserve say` loads without warm-up: it learns nothing, but takes what a server start saved."""
    quick = Runtime(Settings(_env_file=None, engines=["kokoro"]))
    quick.load(warm=False)
    try:
        engine = quick.engines["kokoro"]
        assert isinstance(engine, KokoroEngine) and engine.streamer is not None
        streamer = engine.streamer
        assert streamer.stats_model is not None and streamer.voice_stats is not None
        assert all(streamer.stats_model.knows(voice.id) for voice in quick.voices())
        assert streamer.voice_stats.frames_seen("af_heart") > 0
    finally:
        quick.close()


def test_the_languages_of_its_voices_are_ready_at_start(runtime: Runtime) -> None:
    """A first Mandarin or Japanese request should not pay ~1-5 s for a cold text front end."""
    assert {"en-us", "zh", "ja", "fr"} <= set(runtime._warm_languages())
    assert {("zh", "misaki"), ("ja", "misaki"), ("fr", "misaki")} <= set(runtime.frontend._g2ps)
    assert Runtime(Settings(_env_file=None, warm_languages="none"))._warm_languages() == []
    assert Runtime(Settings(_env_file=None, warm_languages="zh, ja"))._warm_languages() == ["zh", "ja"]


@pytest.mark.e2e  # it loads the real Piper model (in a subprocess: no fixture tells the tier)
def test_a_loaded_runtime_leaves_the_numerical_libraries_one_thread_each() -> None:
    """The worker pool counts every core its model calls hold. A BLAS call on a worker (the decoder
    statistics' prediction, the text front's tagger) must not wake a thread per core of OpenBLAS's own,
    which the pool does not count: on a two-core box it took a core from a window planned on both.
    Read in a process of its own: in this one, other tests load libraries of their own afterwards
    (Whisper's OpenMP), which are no server's."""
    import json
    import subprocess
    import sys

    probe = (
        "import json\n"
        "from threadpoolctl import threadpool_info\n"
        "from voxserve.runtime import Runtime\n"
        "from voxserve.settings import Settings\n"
        "runtime = Runtime(Settings(_env_file=None, engines=['piper'], warm_languages='none'))\n"
        "runtime.load()\n"
        "print(json.dumps([(i['internal_api'], i['num_threads']) for i in threadpool_info()]))\n"
        "runtime.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=180, check=True)
    pools = [tuple(pool) for pool in json.loads(done.stdout.strip().splitlines()[-1])]
    assert ("openblas", 1) in pools  # numpy's own BLAS is loaded by then, at one thread
    assert all(threads == 1 for _, threads in pools), pools


def test_a_windowed_runtime_loads_the_whole_models_only_when_something_needs_them(runtime: Runtime) -> None:
    from voxserve.engines.onnx import LazySession

    for name, engine in runtime.engines.items():
        assert isinstance(engine, KokoroEngine | PiperEngine), name
        assert engine.windowed, name
        assert isinstance(engine.session, LazySession), name  # streaming never touches it


def test_tuning_is_code_not_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOXSERVE_WINDOW_FIRST_MS", "50")
    monkeypatch.setenv("VOXSERVE_ELASTIC_THREADS", "false")
    runtime = Runtime(Settings(_env_file=None))
    assert runtime.tuning == Tuning() and runtime.session_config().first_window_s == 0.4
    with pytest.raises(ValueError, match="decode_mode"):
        Tuning(decode_mode=cast(DecodeMode, "fast"))


async def test_a_cold_server_books_streams_at_their_first_jobs_cost_until_a_lone_stream_is_measured(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Before anything is measured every stream is booked at what its first job costs per audio second
    (streams that start together run those jobs at once); one stream alone gives the meter its first
    sample, and from then on streams are booked at what they really hold. (The stream's windows teach
    the costs too, at the threads each ran with: the share is read again after it.)"""
    from bench.arrival_trace import REPLY
    from tests.conftest import FAKE_ENGINES

    settings = Settings(_env_file=None, cache_dir=tmp_path_factory.mktemp("cold"), warm_languages=["none"])
    rt = Runtime(settings, families=FAKE_ENGINES, tuning=Tuning(capacity_sample_core_s=0.05))
    rt.load(warm=True)  # the warm-up teaches the window costs; no stream has been measured yet
    try:
        share = rt.window_share("piper")
        assert share is not None and rt.core_factor == 1.0
        config = rt.session_config()
        assert config.first_window_s < config.max_window_s
        cold = rt.stream_share("piper")
        assert cold is not None and cold > 1.05 * share
        session = rt.open_session(SynthesisParams(voice="en_US-joe-medium"), pace=False)  # alone, unpaced
        session.push_text(REPLY)
        session.close()
        audio_s = sum([chunk.duration_s async for chunk in session])
        assert audio_s > 6.0
        assert rt._pricing is not None and rt._pricing.meter.samples >= 1
        after = rt.window_share("piper")
        assert after is not None and rt.stream_share("piper") == pytest.approx(after * rt.core_factor)
    finally:
        rt.close()


async def test_the_warm_up_runs_a_stream_on_the_pools_workers_and_leaves_no_samples_behind(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A stream's first jobs on a fresh server ran up to twice their learned cost until the pool's
    workers had run a stream, so the warm-up speaks once through a session on them (from inside a
    running event loop too, as here). Its cold jobs are no stream's: the playing margin keeps none."""
    from tests.conftest import FAKE_ENGINES

    settings = Settings(_env_file=None, cache_dir=tmp_path_factory.mktemp("warm"), warm_languages=["none"])
    cold = Runtime(settings, families=FAKE_ENGINES)
    cold.load(warm=False)
    warm = Runtime(settings, families=FAKE_ENGINES)
    warm.load(warm=True)
    try:
        assert cold.pool.held_core_s == 0.0  # nothing ran on the workers
        assert warm.pool.held_core_s > 0.0  # the warm-up's stream did
        assert warm.pool.margin.samples == (0, 0) and warm.pool.margin.margin_s == 0.0
    finally:
        cold.close()
        warm.close()
