"""Where do listeners run dry when callers arrive close together? A trace, in one process, of real-time
sessions on the real models: each chunk (its stream, the audio before it, its length, the stream's lead
over its listener) with the window planner's decisions between them, then each stream's stalls.

    .venv/bin/python -m bench.arrival_trace --voice af_heart --listeners 2 --gap 0.45

The listener plays each stream from its first audio in real time, as the server counts stalls
(:class:`~voxserve.stream.playback.PlaybackClock`): ``dry`` marks a chunk its listener waited for. The
lines ``window … s with … s ahead, cost a + b/s, load L`` are the planner's
(:mod:`voxserve.stream.window_budget`, logged at DEBUG), in milliseconds since the start.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from collections.abc import Callable

from voxserve.runtime import Runtime
from voxserve.settings import Settings
from voxserve.stream.playback import PlaybackClock
from voxserve.types import AudioChunk, SynthesisParams

REPLY = (
    "Thanks for calling. Your order shipped this morning and should arrive on Thursday. "
    "If anything is missing, reply to the email and we will send it again at no cost."
)


def _no_trace(now: float, chunk: AudioChunk, lead: float, wait: float) -> None:
    return None


async def listen(
    runtime: Runtime,
    voice: str,
    delay: float,
    trace: Callable[[float, AudioChunk, float, float], None] = _no_trace,
) -> PlaybackClock:
    """One caller arriving after ``delay`` s and playing :data:`REPLY` from its first audio in real time;
    ``trace`` sees each chunk as it arrives (the time, the chunk, the lead it arrived with, the wait it ended)."""
    await asyncio.sleep(delay)
    session = runtime.open_session(SynthesisParams(voice=voice), pace=True)
    session.push_text(REPLY)
    session.close()
    clock = PlaybackClock()  # the server's own rule for a listener running dry
    async for chunk in session:
        now = time.monotonic()
        lead = clock.ahead_s(now) if clock.first_at is not None else 0.0
        trace(now, chunk, lead, clock.on_audio(now, chunk.duration_s))
    return clock


async def _traced(runtime: Runtime, voice: str, number: int, delay: float, t0: float) -> None:
    def trace(now: float, chunk: AudioChunk, lead: float, wait: float) -> None:
        late = f" dry {wait:.2f} s" if wait else ""
        at, audio = f"{(now - t0) * 1000:7.0f}", f"{chunk.start_s:5.2f} +{chunk.duration_s:.2f}"
        print(f"{at} S{number} audio {audio} ahead {lead:.2f}{late}")

    clock = await listen(runtime, voice, delay, trace)
    first = (clock.first_at or t0) - t0 - delay
    stalls = ", ".join(f"{s.wait_s:.2f} s at {s.at_s:.2f} s" for s in clock.stalls) or "none"
    print(f"S{number}: {clock.audio_s:.2f} s of audio, first after {first:.2f} s; stalls: {stalls}")


async def _main(voice: str, listeners: int, gap: float) -> None:
    runtime = Runtime(Settings(_env_file=None))
    runtime.load(warm=True)
    engine = runtime.engine_for(voice).name
    share = runtime.stream_share(engine)
    print(f"{engine}: one real-time stream takes {share if share is None else round(share, 3)} of the machine")
    t0 = time.monotonic()
    logging.basicConfig(level=logging.WARNING, format="%(relativeCreated)7.0f %(message)s")
    logging.getLogger("voxserve.stream.window_budget").setLevel(logging.DEBUG)
    try:
        await asyncio.gather(*(_traced(runtime, voice, n, n * gap, t0) for n in range(listeners)))
    finally:
        runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--listeners", type=int, default=2)
    parser.add_argument("--gap", type=float, default=0.45, help="seconds between arrivals")
    args = parser.parse_args()
    asyncio.run(_main(args.voice, args.listeners, args.gap))


if __name__ == "__main__":
    main()
