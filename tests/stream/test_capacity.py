"""A real-time stream's share of the machine, from learned window costs (synthetic costs)."""

from __future__ import annotations

import pytest

from voxserve.engines.windowing import WindowCost
from voxserve.stream.capacity import CoreMeter, Pricing, StreamCost, cheapest_share, ramp_factor, stream_share


def test_a_stream_keeps_its_threads_busy_for_its_cost_per_audio_second() -> None:
    # 0.25 s of work per audio second and 0.1 s per window, 2 s windows, one thread: 0.3 of a core
    cost = StreamCost(a=0.1, b=0.25, threads=1)
    assert cost.cores_per_stream(2.0) == pytest.approx(0.3)
    assert stream_share(cost, 2.0, cores=2) == pytest.approx(0.15)
    assert stream_share(cost, 0.5, cores=2) > stream_share(cost, 2.0, cores=2)  # small windows cost more
    assert stream_share(StreamCost(0.1, 0.25, threads=2), 2.0, cores=2) == pytest.approx(0.3)


def test_the_cheapest_learned_level_sets_the_share() -> None:
    narrow = StreamCost(a=0.1, b=0.25, threads=1)  # what streams get under load
    wide = StreamCost(a=0.07, b=0.18, threads=2)  # a lone stream on both cores: less per call, more per core
    assert cheapest_share([wide, narrow], 2.0, cores=2) == pytest.approx(0.15)
    stale = StreamCost(a=0.4, b=1.0, threads=1)  # learned while the machine was busy, never refreshed
    assert cheapest_share([wide, stale], 2.0, cores=2) == pytest.approx(2 * (0.18 + 0.035) / 2)
    assert cheapest_share([], 2.0, cores=2) is None


def test_the_core_meter_scales_shares_by_what_streams_really_hold() -> None:
    held = [10.0]  # core-seconds the pool's jobs have held so far (warm-up and earlier work)
    meter = CoreMeter(lambda: held[0], sample_core_s=1.0)
    assert meter.factor == 1.0 and meter.samples == 0
    meter.delivered(0.4)  # opens a span: this piece's own work counts as booked
    held[0] += 0.6  # the next pieces really held 1.5x what they booked
    meter.delivered(0.4)
    assert meter.samples == 0  # 0.8 booked core-seconds: below one sample
    held[0] += 0.6
    meter.delivered(0.4)
    assert meter.samples == 1
    assert meter.factor == pytest.approx((0.4 + 1.2) / 1.2)
    held[0] += 100.0  # work between spans that delivered nothing (a cancelled stream, idle time) is left out
    meter.delivered(0.5)
    held[0] += 0.5
    meter.delivered(0.5)
    assert meter.samples == 2  # a sample of exactly what was booked pulls the factor halfway to 1
    assert meter.factor == pytest.approx(0.5 * (1.6 / 1.2) + 0.5 * 1.0)
    meter.delivered(0.0)
    assert meter.samples == 2
    with pytest.raises(ValueError, match="positive"):
        CoreMeter(lambda: 0.0, sample_core_s=0.0)


def test_a_streams_first_job_costs_more_per_audio_second_than_its_largest_window() -> None:
    # 0.1 s per window and 0.25 s per audio second, 2 s windows: 0.3 s per audio second. The first job runs
    # the text's front (about one window's fixed part) and a 0.4 s window: (0.1 + 0.1 + 0.25 * 0.4) / 0.4
    costs = [StreamCost(a=0.1, b=0.25, threads=1), StreamCost(a=0.07, b=0.18, threads=2)]
    assert ramp_factor(costs[:1], 0.4, 2.0, cores=2) == pytest.approx(0.75 / 0.3)
    assert ramp_factor(costs, 0.4, 2.0, cores=2) == pytest.approx(0.75 / 0.3)  # the cheapest level, as booked
    assert ramp_factor(costs, 2.0, 2.0, cores=2) == pytest.approx(0.35 / 0.3)  # the front, even in a large window
    assert ramp_factor([], 0.4, 2.0, cores=2) == 1.0  # nothing learned: no premium


def test_pricing_books_a_stream_at_its_first_job_until_the_meter_has_a_sample_then_at_what_it_holds() -> None:
    """The runtime's prices, on synthetic window costs: one engine has learned costs at one and two
    threads, another has none (its streams have no price), and delivered audio feeds the meter at the
    thread level the pool gives jobs now."""
    learned = WindowCost(context_s=0.0, min_samples=2)
    for decoded_s, seconds in ((0.5, 0.225), (2.0, 0.6)):  # 0.1 s per window, 0.25 s per audio second
        learned.record(decoded_s, seconds, threads=1)
    held, threads_now = [0.0], [1]
    pricing = Pricing(
        lambda engine: learned if engine == "kokoro" else None,
        (2, 1),
        2,
        (0.4, 2.0),
        held=lambda: held[0],
        threads_now=lambda: threads_now[0],
        sample_core_s=0.5,
    )
    assert pricing.costs("piper") == [] and pricing.stream_share("piper") is None
    assert [c.threads for c in pricing.costs("kokoro")] == [1]  # nothing learned at two threads yet
    window = pricing.window_share("kokoro")
    assert window is not None and window == pytest.approx(0.15)
    assert pricing.stream_share("kokoro") == pytest.approx(0.15 * ramp_factor(pricing.costs("kokoro"), 0.4, 2.0, 2))
    threads_now[0] = 2  # no cost learned at the level jobs get now: nothing to book against
    pricing.delivered("kokoro", 10.0)
    assert pricing.meter.samples == 0
    threads_now[0] = 1
    pricing.delivered("kokoro", 1.0)  # opens a span: 0.3 core-seconds booked
    held[0] += 0.9  # the next two audio seconds held 0.9 core-seconds against 0.6 booked
    pricing.delivered("kokoro", 2.0)
    assert pricing.meter.samples == 1
    assert pricing.stream_share("kokoro") == pytest.approx(window * pricing.meter.factor)
