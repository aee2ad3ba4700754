"""The bench's own arithmetic on synthetic timelines: percentiles, records and underruns, the capacity
search, the Poisson arrivals, the soak's growth, and the /metrics reader."""

from __future__ import annotations

import asyncio
import itertools
import random
import statistics

import numpy as np
import pytest

from voxserve.benchmark import corpus
from voxserve.benchmark.capacity import CapacityTarget, find_capacity
from voxserve.benchmark.records import PcmCounter, RequestRecord, record_from_arrivals
from voxserve.benchmark.scrape import Scrape, parse, stall_delta
from voxserve.benchmark.soak import growth
from voxserve.benchmark.stats import LevelSummary, percentile, summarize
from voxserve.benchmark.transports import fragments
from voxserve.benchmark.workload import Plan, join_times, poisson_arrivals


@pytest.mark.parametrize("q", [0, 10, 50, 90, 99, 100])
def test_percentile_matches_numpy_linear(q: float) -> None:
    values = [random.Random(q).uniform(0, 5) for _ in range(37)]
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_edges() -> None:
    assert percentile([4.0], 99) == 4.0
    assert percentile([1.0, 2.0], 50) == 1.5
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_pcm_counter_counts_whole_samples_across_odd_chunks() -> None:
    counter = PcmCounter(22_050, t0=0.0)
    for size in (1, 4_409, 0, 39_690, 1):  # 44_101 bytes: 22_050 whole samples and a half one
        counter.add(size)
    assert sum(seconds for _, seconds in counter.arrivals) == 1.0
    assert len(counter.arrivals) == 2  # the lone first byte and the empty chunk carry no sample


def test_record_on_time_stream_has_no_underrun() -> None:
    # first audio at 0.2 s, then 0.5 s of audio every 0.4 s: always ahead of playback
    arrivals = [(0.2 + 0.4 * k, 0.5) for k in range(6)]
    record = record_from_arrivals(arrivals, transport="ws", voice="v", chars=10, started_s=1.0)
    assert record.first_audio_s == pytest.approx(0.2)
    assert record.last_audio_s == pytest.approx(2.2)
    assert record.audio_s == pytest.approx(3.0)
    assert record.rtf == pytest.approx(2.2 / 3.0)
    assert record.underruns == 0 and not record.stalled and record.ok


def test_record_counts_underruns_where_the_listener_runs_dry() -> None:
    # 0.3 s of audio at 0.1 s plays until 0.4 s; the next arrives at 0.9 s: 0.5 s of silence after 0.3 s
    # of audio. Then 1.0 s plays 0.9 → 1.9; the next at 1.8 is in time; 0.2 s plays until 2.1 … dry
    # until 2.6 (0.5 s more after 1.5 s of audio).
    arrivals = [(0.1, 0.3), (0.9, 1.0), (1.8, 0.2), (2.6, 0.4)]
    record = record_from_arrivals(arrivals, transport="http", voice="v", chars=5, started_s=0.0)
    assert record.underruns == 2
    assert record.underrun_s == pytest.approx(1.0)
    assert record.underrun_at_s == pytest.approx((0.3, 1.5))
    assert record.stalled
    # its listener hears the last of it 0.1 (first audio) + 1.9 (audio) + 1.0 (waits) s after the request
    assert record.played_s == pytest.approx(3.0)


def test_record_without_audio_is_a_failure() -> None:
    record = record_from_arrivals([], transport="grpc", voice="v", chars=5, started_s=0.0, error="no audio")
    assert not record.ok and record.first_audio_s is None and record.rtf is None and record.played_s == 0


def _level(n: int, first_audio: list[float], stalled: int = 0, errors: int = 0) -> LevelSummary:
    records = [
        record_from_arrivals(
            [(t, 1.0), (t + (3.0 if k < stalled else 0.5), 1.0)], transport="http", voice="v", chars=3, started_s=0.0
        )
        for k, t in enumerate(first_audio)
    ]
    records += [record_from_arrivals([], transport="http", voice="v", chars=3, started_s=0.0, error="x")] * errors
    return summarize(f"c={n}", n, records, wall_s=10.0)


def test_summary_of_a_level() -> None:
    level = _level(4, [0.1, 0.2, 0.3, 0.4], stalled=1, errors=1)
    assert level.requests == 5 and level.errors == 1
    assert level.stall_rate == pytest.approx(0.25)
    assert level.underrun_s_total == pytest.approx(2.0)
    assert level.first_audio_s.p50 == pytest.approx(0.25)
    assert level.throughput == pytest.approx(8 / 10.0)


async def test_capacity_search_finds_the_knee() -> None:
    # first audio grows past 3x the lone value from 11 listeners on; nothing stalls
    calls: list[int] = []

    async def measure(n: int) -> LevelSummary:
        calls.append(n)
        return _level(n, [0.1 if n <= 10 else 0.5] * 20)

    result = await find_capacity(measure, CapacityTarget())
    assert result.capacity == 10
    assert result.lone_first_audio_s == pytest.approx(0.1)
    assert result.first_audio_limit_s == pytest.approx(0.3)
    assert calls[:6] == [1, 2, 4, 8, 16, 12]  # doubling, then bisection between 8 and 16
    assert sorted(set(calls)) == [1, 2, 4, 8, 10, 11, 12, 16]
    assert [v.held for v in result.verdicts if v.concurrency == 11] == [False]


async def test_capacity_search_stops_on_stalls() -> None:
    async def measure(n: int) -> LevelSummary:
        # from 6 listeners on, one request in ten underruns: over the 1 % target
        return _level(n, [0.1] * 20, stalled=2 if n >= 6 else 0)

    result = await find_capacity(measure)
    assert result.capacity == 5
    failed = [v for v in result.verdicts if not v.held]
    assert failed and all("stall rate" in v.reason for v in failed)


async def test_capacity_zero_when_a_lone_listener_stalls() -> None:
    async def measure(n: int) -> LevelSummary:
        return _level(n, [0.1] * 10, stalled=5)

    assert (await find_capacity(measure)).capacity == 0


async def test_capacity_search_respects_the_cap() -> None:
    async def measure(n: int) -> LevelSummary:
        return _level(n, [0.1] * 5)

    result = await find_capacity(measure, CapacityTarget(max_concurrency=6))
    assert result.capacity == 6


def test_poisson_arrivals_statistics() -> None:
    times = poisson_arrivals(5.0, 2000.0, random.Random(7))
    gaps = np.diff([0.0, *times])
    assert len(times) / 2000.0 == pytest.approx(5.0, rel=0.05)
    assert statistics.mean(gaps) == pytest.approx(0.2, rel=0.05)
    assert statistics.stdev(gaps) == pytest.approx(0.2, rel=0.08)  # exponential gaps: sd equals the mean
    counts = np.histogram(times, bins=np.arange(0, 2001, 1.0))[0]
    assert counts.var() / counts.mean() == pytest.approx(1.0, rel=0.15)  # Poisson counts: variance = mean
    assert times == sorted(times) and times[0] > 0 and times[-1] < 2000.0
    assert poisson_arrivals(5.0, 2000.0, random.Random(7)) == times  # the seed fixes the schedule
    with pytest.raises(ValueError):
        poisson_arrivals(0, 10, random.Random(0))


def test_listeners_join_at_random_within_the_ramp() -> None:
    times = join_times(2000, 2.0, random.Random(3))
    assert times == sorted(times) and times[0] >= 0 and times[-1] < 2.0
    counts = np.histogram(times, bins=4, range=(0.0, 2.0))[0]
    assert list(counts) == pytest.approx([500] * 4, rel=0.15)  # uniform over the ramp, not bunched
    assert join_times(2000, 2.0, random.Random(3)) == times  # the seed fixes them
    assert join_times(3, 0.0, random.Random(3)) == [0.0, 0.0, 0.0]  # no ramp: a herd, on purpose
    with pytest.raises(ValueError):
        join_times(3, -1.0, random.Random(3))


async def _closed_loop(plan: Plan, listeners: int) -> list[RequestRecord]:
    """A closed loop of ``listeners`` on ``plan`` (with ``workload.speak`` patched by the caller): its records."""
    from voxserve.benchmark import workload
    from voxserve.benchmark.transports import Clients

    progress = workload.Progress("test", plan.duration_s, quiet=True)
    clients = Clients("http://127.0.0.1:9", "127.0.0.1:9")
    try:
        records, _ = await workload.closed_loop(clients, plan, listeners, {"v": 22050}, progress)
    finally:
        await clients.aclose()
    return records


async def test_a_closed_loops_listeners_send_their_first_requests_at_their_join_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from voxserve.benchmark import workload

    async def slow(transport: str, clients: object, job: object) -> list[tuple[float, float]]:
        await asyncio.sleep(1.0)  # past the run's end: one request per listener
        return [(0.01, 0.1)]

    monkeypatch.setattr(workload, "speak", slow)
    records = await _closed_loop(workload.Plan(("http",), ("v",), ("Hi.",), duration_s=0.6, seed=5, ramp_s=0.5), 4)
    expected = join_times(4, 0.5, random.Random(5))
    assert len(records) == 4 and len(set(expected)) == 4
    assert sorted(r.started_s for r in records) == pytest.approx(expected, abs=0.05)


@pytest.mark.parametrize(
    ("options", "ramp"), [([], 2.0), (["--duration", "2"], 1.0), (["--ramp", "0"], 0.0), (["--ramp", "30"], None)]
)
def test_the_ramp_defaults_within_the_duration_and_must_end_before_it(options: list[str], ramp: float | None) -> None:
    import argparse

    from voxserve.benchmark.command import _check, add_arguments
    from voxserve.errors import InvalidInput

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(options)
    if ramp is None:
        with pytest.raises(InvalidInput, match="--ramp must be"):
            _check(args)
    else:
        _check(args)
        assert args.ramp == ramp


def test_soak_growth_after_warmup() -> None:
    # RSS jumps during warm-up (ignored), then rises by 1 MiB a minute; fds stay flat
    scrapes = [Scrape(t, {"rss_bytes": (100 if t < 60 else 200) * 2**20 + t / 60 * 2**20, "open_fds": 40.0})
               for t in range(0, 301, 10)]  # fmt: skip
    rows = {g.name: g for g in growth(scrapes, warmup=60)}
    assert rows["rss_bytes"].slope_per_min == pytest.approx(2**20)
    assert rows["rss_bytes"].growth == pytest.approx(4 * 2**20)
    assert rows["open_fds"].growth == 0 and rows["open_fds"].slope_per_min == pytest.approx(0, abs=1e-9)
    assert "threads" not in rows  # not exported: not reported


def test_metrics_reader_sums_labels_and_tolerates_absent_series() -> None:
    text = (
        "# TYPE process_open_fds gauge\nprocess_open_fds 42.0\n"
        "# TYPE voxserve_threads gauge\nvoxserve_threads 17.0\n"
        "# TYPE voxserve_stalled_streams_total counter\n"
        'voxserve_stalled_streams_total{engine="piper",transport="ws"} 2.0\n'
        'voxserve_stalled_streams_total{engine="kokoro",transport="http"} 3.0\n'
        "# TYPE voxserve_load gauge\nvoxserve_load 0.5\n"
    )
    values = parse(text)
    assert values == {"open_fds": 42.0, "threads": 17.0, "voxserve_stalled_streams_total": 5.0, "voxserve_load": 0.5}
    assert stall_delta({"voxserve_stalled_streams_total": 1.0}, values) == {"voxserve_stalled_streams_total": 4.0}
    assert stall_delta({}, parse("# TYPE process_open_fds gauge\nprocess_open_fds 3.0\n")) == {}


def test_corpus_sets_are_large_and_free_of_digits() -> None:
    names = corpus.available()
    for required in (*corpus.BENCH_SETS, "fr", "es", "it", "pt"):
        assert required in names
    for name in names:
        lines = corpus.load(name)
        assert len(lines) >= 20, name
        assert not any(ch.isdigit() for line in lines for ch in line), name


def test_fragments_resemble_llm_tokens() -> None:
    assert fragments("Hello there, friend.") == ["Hello ", "there, ", "friend."]
    assert "".join(fragments("你好，请问有什么可以帮您的吗？")) == "你好，请问有什么可以帮您的吗？"
    assert max(len(p) for p in fragments("你好，请问有什么可以帮您的吗？")) <= 2


async def test_a_refused_listener_waits_before_asking_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from voxserve.benchmark import workload
    from voxserve.benchmark.transports import TransportError

    calls: list[str] = []

    async def refuse(transport: str, clients: object, job: object) -> list[tuple[float, float]]:
        calls.append(transport)
        await asyncio.sleep(0.05)
        raise TransportError("HTTP 503: server at capacity")

    monkeypatch.setattr(workload, "speak", refuse)
    monkeypatch.setattr(workload, "FAILED_PAUSE_S", 0.2)
    records = await _closed_loop(workload.Plan(("http",), ("v",), ("Hello there.",), duration_s=0.5), 2)
    assert 4 <= len(calls) <= 8  # two listeners, one request each per 0.2 s pause, not a tight loop
    assert all(not r.ok and "503" in (r.error or "") for r in records)
    # each record says how long its refusal took, and the level's summary their spread
    assert all(r.failed_after_s == pytest.approx(0.05, abs=0.04) for r in records)
    assert summarize("c=2", 2, records, 0.5).failed_after_s.p90 == pytest.approx(0.05, abs=0.04)


@pytest.mark.parametrize("play", [True, False])
async def test_a_listener_that_plays_asks_again_once_its_reply_has_played(
    monkeypatch: pytest.MonkeyPatch, play: bool
) -> None:
    from voxserve.benchmark import workload

    async def reply(transport: str, clients: object, job: object) -> list[tuple[float, float]]:
        await asyncio.sleep(0.05)
        return [(0.05, 0.3)]  # 0.3 s of audio 0.05 s after the request: played 0.35 s after it

    monkeypatch.setattr(workload, "speak", reply)
    records = await _closed_loop(workload.Plan(("http",), ("v",), ("Hi.",), duration_s=1.0, play=play), 1)
    starts = sorted(r.started_s for r in records)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    if play:  # asks at 0, 0.35 and 0.7 s; the next would be past the run's end
        assert len(records) == 3 and gaps == pytest.approx([0.35, 0.35], abs=0.04)
    else:  # asks again as soon as the audio has arrived, every 0.05 s
        assert len(records) >= 12 and max(gaps) < 0.1


def test_levels_show_their_share_of_the_saturation_measured_in_the_same_run() -> None:
    from voxserve.benchmark.report import level_table

    saturation, level = _level(8, [0.1] * 40), _level(4, [0.1] * 10)  # 80 and 20 audio seconds in 10 s
    rows = level_table("v", [level], saturation).splitlines()
    assert rows[1].endswith("of sat") and "c=8" in rows[2] and "c=4" in rows[3]
    assert rows[2].endswith(" 100%") and rows[3].endswith(" 25%")
    assert "of sat" not in level_table("v", [level])  # no saturation measured: no share


@pytest.mark.parametrize("options", [["--saturation", "0"], ["--saturation", "4", "--soak", "1"]])
def test_saturation_needs_listeners_and_no_soak(options: list[str]) -> None:
    import argparse

    from voxserve.benchmark.command import _check, add_arguments
    from voxserve.errors import InvalidInput

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    with pytest.raises(InvalidInput, match="--saturation"):
        _check(parser.parse_args(options))


def test_the_capacity_line_gives_the_share_of_the_saturation() -> None:
    from voxserve.benchmark.capacity import CapacityResult, Verdict
    from voxserve.benchmark.report import capacity_line

    levels = (_level(1, [0.1]), _level(8, [0.1] * 20), _level(4, [0.1] * 10))  # 4 held, after 8 failed
    result = CapacityResult(
        4, 0.1, 0.3, (Verdict(1, True, "held"), Verdict(8, False, "x"), Verdict(4, True, "held")), levels
    )
    saturation = _level(8, [0.1] * 40)  # 8 audio seconds a second, of which the 4 listeners took 2
    assert capacity_line("v", result, saturation).startswith(
        "capacity v: 4 concurrent listeners, 25% of the saturation ("
    )
    assert capacity_line("v", result).startswith("capacity v: 4 concurrent listeners (")


@pytest.mark.parametrize(
    ("options", "refused"),
    [
        (["--soak", "0"], "--soak takes a positive"),
        (["--soak", "-1"], "--soak takes a positive"),
        (["--soak", "0.05", "--ramp", "20"], r"shorter than --soak \(3 s\)"),
        (["--duration", "nan"], "--duration must be"),
        (["--duration", "inf"], "--duration must be"),
        (["--target-ratio", "-1"], "--target-ratio"),
        (["--max-stall-rate", "-1"], "--max-stall-rate"),
        (["--max-stall-rate", "1.5"], "--max-stall-rate"),
        (["--max-concurrency", "0"], "--max-concurrency"),
    ],
)
def test_options_that_would_measure_nothing_are_refused_before_any_request(options: list[str], refused: str) -> None:
    import argparse

    from voxserve.benchmark.command import _check, add_arguments
    from voxserve.errors import InvalidInput

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    with pytest.raises(InvalidInput, match=refused):
        _check(parser.parse_args(options))


def test_the_reasons_requests_failed_are_counted_and_a_rate_limit_is_named() -> None:
    from voxserve.benchmark.records import RequestRecord
    from voxserve.benchmark.report import failures

    def failed(error: str) -> RequestRecord:
        return RequestRecord("http", "v", 5, 0.0, None, None, 0.0, None, 0, 0.0, error=error)

    records = [failed("TransportError: HTTP 429 rate_limited: too many requests (limit 120/min)")] * 4
    records += [failed("TransportError: HTTP 503 overloaded: server at capacity (2 streams, load 0.78)")] * 2
    line = failures(records)
    assert line.startswith("failed: 4 x HTTP 429 rate_limited: too many requests; 2 x HTTP 503 overloaded"), line
    assert "VOXSERVE_RATE_LIMIT_PER_MINUTE=0" in line
    assert failures([]) == ""
