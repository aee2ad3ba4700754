"""Locust load test: listeners over HTTP streaming and over the WebSocket, with first audio as a metric.

    locust -f bench/locustfile.py --headless -u 100 -r 10 -t 60s --host http://127.0.0.1:8000

Besides Locust's own request rows, every request adds a ``first audio`` row (time from the request to
its first audio byte, in ms) and a ``playback`` row, which fails when a listener playing from the
first byte would have run dry (the listener model of ``voxserve.stream.playback``). The voice comes
from ``VOXSERVE_BENCH_VOICE`` (default en_US-joe-medium), the texts from the shipped ``short`` set
(``VOXSERVE_BENCH_TEXT_SET`` to change it). A server with API keys takes ``VOXSERVE_API_KEY`` (the
clients' variable) as a Bearer token on both transports.
"""

from __future__ import annotations

import json
import os
import random
import time

from locust import HttpUser, User, between, task
from websockets.sync.client import connect

from voxserve.benchmark import corpus
from voxserve.benchmark.records import Arrivals, PcmCounter, record_from_arrivals
from voxserve.errors import InvalidInput

VOICE = os.environ.get("VOXSERVE_BENCH_VOICE", "en_US-joe-medium")
try:
    TEXTS = corpus.load(os.environ.get("VOXSERVE_BENCH_TEXT_SET", "short"))
except InvalidInput as exc:  # one line naming the variable, not a traceback from Locust's import
    raise SystemExit(f"VOXSERVE_BENCH_TEXT_SET: {exc}") from None
_KEY = os.environ.get("VOXSERVE_API_KEY")
HEADERS = {"Authorization": f"Bearer {_KEY}"} if _KEY else {}


def _report(user: User, transport: str, arrivals: Arrivals, chars: int) -> None:
    """Fire the custom ``first audio`` and ``playback`` rows for one finished request."""
    record = record_from_arrivals(arrivals, transport=transport, voice=VOICE, chars=chars, started_s=0.0)
    if record.first_audio_s is None:
        return
    fire = user.environment.events.request.fire
    fire(request_type=transport.upper(), name="first audio", response_time=record.first_audio_s * 1000,
         response_length=0, exception=None, context={})  # fmt: skip
    stalled = RuntimeError(f"{record.underruns} underruns, {record.underrun_s:.2f} s") if record.stalled else None
    fire(request_type=transport.upper(), name="playback", response_time=record.audio_s * 1000,
         response_length=0, exception=stalled, context={})  # fmt: skip


class HttpStreamingUser(HttpUser):
    """POST /v1/audio/speech, raw PCM read as it streams."""

    wait_time = between(0.5, 2.0)

    @task
    def speak(self) -> None:
        text = random.choice(TEXTS)
        body = {"model": "tts-1", "input": text, "voice": VOICE, "response_format": "pcm"}
        t0 = time.perf_counter()
        post = self.client.post("/v1/audio/speech", json=body, headers=HEADERS, stream=True, catch_response=True)
        with post as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}: {response.text[:200]}")
                return
            counter = PcmCounter(int(response.headers.get("X-Sample-Rate", "24000")), t0)
            for data in response.iter_content(chunk_size=None):
                counter.add(len(data))
        _report(self, "http", counter.arrivals, len(text))


class WebSocketUser(User):
    """One connection per utterance on /v1/tts/stream: config, the text, close; audio until done."""

    wait_time = between(0.5, 2.0)

    @task
    def speak(self) -> None:
        text = random.choice(TEXTS)
        url = (self.host or "http://127.0.0.1:8000").replace("http", "ws", 1).rstrip("/") + "/v1/tts/stream"
        t0 = time.perf_counter()
        error: Exception | None = None
        counter: PcmCounter | None = None
        try:
            with connect(url, max_size=None, additional_headers=HEADERS) as ws:
                ws.send(json.dumps({"type": "config", "voice": VOICE, "format": "pcm"}))
                ready = json.loads(ws.recv())
                if ready.get("type") != "ready":
                    raise RuntimeError(f"config refused: {ready}")
                counter = PcmCounter(int(ready["sample_rate"]), time.perf_counter())
                ws.send(json.dumps({"type": "text", "text": text}))
                ws.send(json.dumps({"type": "close"}))
                for message in ws:
                    if isinstance(message, bytes):
                        counter.add(len(message))
                        continue
                    event = json.loads(message)
                    if event["type"] == "error":
                        raise RuntimeError(f"{event['code']}: {event['message']}")
                    if event["type"] == "done":
                        break
        except Exception as exc:  # Locust counts it as a failed request
            error = exc
        self.environment.events.request.fire(request_type="WS", name="/v1/tts/stream",
                                             response_time=(time.perf_counter() - t0) * 1000,
                                             response_length=counter.bytes if counter else 0,
                                             exception=error, context={})  # fmt: skip
        if error is None and counter is not None:
            _report(self, "ws", counter.arrivals, len(text))
