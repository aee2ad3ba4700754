"""Where a stream's first audio went: waiting for a core, working, and between jobs, from recorded jobs."""

from __future__ import annotations

import re

import pytest
from bench.stall_timeline import _Timelines


def _row(table: str, name: str) -> list[int]:
    """The median, P90 and slowest tenth's mean (ms) of one row of the table."""
    line = next(line for line in table.splitlines() if line.startswith(f"  {name}  "))
    return [int(x) for x in re.findall(r"-?\d+", line[len(name) + 2 :])]


def test_the_parts_of_a_first_audio_add_up_and_only_jobs_before_it_count() -> None:
    timelines = _Timelines()
    # a stream: phonemes submitted at 0, start at once, work 10 ms; its first window waits 200 ms for a
    # core and works 300 ms; its first audio arrives 20 ms later. A later job (after the audio) is ignored.
    timelines.runs[1] = [(0.0, 0.0, 0.010), (0.015, 0.215, 0.515), (0.6, 0.6, 0.9)]
    timelines.first_audio[1] = 0.535
    timelines.held_first.add(1)
    # a stream served at once: 100 ms of work, audio 5 ms after it
    timelines.runs[2] = [(1.0, 1.0, 1.1)]
    timelines.first_audio[2] = 1.105
    # a stream with no first audio yet counts in no row
    timelines.runs[3] = [(2.0, 2.5, 3.0)]

    table = timelines.first_audio_table()

    assert "first audio of 2 streams" in table
    assert "held back for thin streams: 1 of them, 1 of the slowest tenth" in table
    assert _row(table, "first audio")[2] == 535  # the slowest is the first stream: its whole time
    assert _row(table, "waited for a core")[2] == 200
    assert _row(table, "worked")[2] == 310
    assert _row(table, "between jobs")[2] == 25  # 535 - 200 - 310
    assert _row(table, "worked")[0] == 205  # median of 310 and 100


def test_no_first_audio_says_so() -> None:
    assert _Timelines().first_audio_table() == "no first audio seen"


def test_the_slowest_first_audios_are_named_slowest_first_with_their_first_jobs_submission() -> None:
    timelines = _Timelines()
    timelines.t0 = 100.0
    timelines.runs[1] = [(101.0, 101.0, 101.3)]
    timelines.first_audio[1] = 101.4  # 0.4 s
    timelines.runs[2] = [(102.0, 102.9, 103.1), (104.0, 104.0, 104.5)]  # a job after its audio does not count
    timelines.first_audio[2] = 103.2  # 1.2 s
    timelines.runs[3] = [(105.0, 105.0, 105.5)]  # no first audio: never among them
    slowest = timelines.slowest_firsts(5)
    assert [key for key, _, _ in slowest] == [2, 1]
    assert slowest[0][1:] == pytest.approx((2.0, 3.2))  # seconds from the start of the load
    assert timelines.slowest_firsts(1) == slowest[:1]


def test_a_listener_run_dry_is_put_down_to_the_first_of_its_jobs_to_end_after_that_moment() -> None:
    timelines = _Timelines()
    # jobs: submitted, started, ended, expected cost, deadline, threads. The listener ran dry at 2.0 s
    # (its audio came at 2.3 s, a 300 ms wait): the job that ended at 2.3 s made it; it waited 0.5 s.
    timelines.done[1] = [(0.0, 0.0, 0.4, 0.5, 0.0, 2), (1.0, 1.5, 2.3, 0.6, 1.8, 1), (2.4, 2.4, 2.8, 0.5, 3.0, 1)]
    timelines.dry.append((1, 2.3, 1.25, 0.3))
    timelines.dry.append((2, 5.0, 1.0, 0.1))  # a stream with no job recorded is left out
    rows = timelines.causes().splitlines()[2:]
    assert rows == ["    1.25 s,  300 ms | job 1, +0.80 s, 0.50 s, 0.80 / 0.60 s, 1"]
