"""A Pipecat TTS service backed by a voxserve server (extra ``voxserve[pipecat]``).

It speaks protocol 2 over one WebSocket (docs/protocol.md): every Pipecat turn is a voxserve context,
each sentence is sent to it as it is aggregated, and the turn's end closes it. On an interruption
only that context is cancelled; the socket stays open for the next turn, so barge-in needs no
reconnect. Word timings come back with each audio chunk and become Pipecat word timestamps.

    from voxserve.integrations.pipecat import VoxServeTTSService
    tts = VoxServeTTSService(base_url="http://127.0.0.1:8000", voice="af_heart")
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from pipecat.frames.frames import ErrorFrame, Frame, TTSAudioRawFrame, TTSStoppedFrame
from pipecat.processors.frame_processor import FrameProcessorSetup
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import WebsocketTTSService
from websockets.protocol import State

from voxserve.client.types import source_words, words_of


class VoxServeTTSService(WebsocketTTSService):
    """voxserve as a Pipecat TTS. ``voice``: any voxserve voice id or blend; audio is 16-bit PCM at the
    pipeline's output rate (``sample_rate`` to override), which the server resamples to."""

    _websocket: Any  # set by WebsocketService

    def __init__(
        self,
        *,
        base_url: str = "http://127.0.0.1:8000",
        voice: str | None = None,
        speed: float = 1.0,
        lang: str | None = None,
        api_key: str | None = None,
        sample_rate: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            push_text_frames=False,
            push_start_frame=True,
            append_trailing_space=True,  # sentences of a turn are sent one after another
            sample_rate=sample_rate,
            settings=TTSSettings(model=None, voice=voice, language=lang),
            **kwargs,
        )
        self._url = base_url.replace("http", "ws", 1).rstrip("/") + "/v1/tts/stream"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._speed = speed
        self._receive_task: Any = None
        self._chunk: dict[str, Any] | None = None  # a chunk event whose audio frame comes next
        self._sent: dict[str, str] = {}  # text sent per context: what words' char_start/char_end index

    def can_generate_metrics(self) -> bool:
        return True

    async def setup(self, setup: FrameProcessorSetup) -> None:
        await super().setup(setup)
        await self._connect()

    async def _connect(self) -> None:
        await super()._connect()
        await self._connect_websocket()
        if self._websocket and not self._receive_task:
            self._receive_task = self.create_task(self._receive_task_handler(self._report_error))

    async def _disconnect(self) -> None:
        await super()._disconnect()
        if self._receive_task:
            await self.cancel_task(self._receive_task)
            self._receive_task = None
        await self._disconnect_websocket()

    async def _connect_websocket(self) -> None:
        if self._websocket and self._websocket.state is State.OPEN:
            return
        try:
            self._websocket = await self._websocket_connect(self._url, additional_headers=self._headers)
            config = {
                "type": "config",
                "protocol": 2,
                "voice": self._settings.voice,
                "lang": self._settings.language,
                "speed": self._speed,
                "format": "pcm",
                "sample_rate": self.sample_rate,
                "word_timings": True,
            }
            await self._websocket.send(json.dumps(config))
            ready = json.loads(await self._websocket.recv())
            if ready.get("type") != "ready":
                raise ConnectionError(f"voxserve refused the config: {ready.get('message', ready)}")
            self._chunk = None
            await self._call_event_handler("on_connected")
        except Exception as exc:
            await self.push_error(error_msg=f"voxserve connection failed: {exc}", exception=exc)
            self._websocket = None
            await self._call_event_handler("on_connection_error", f"{exc}")

    async def _disconnect_websocket(self) -> None:
        try:
            if self._websocket:
                await self._websocket.close()
        finally:
            self._websocket = None
            await self._call_event_handler("on_disconnected")

    async def _send(self, **message: Any) -> None:
        if self._websocket is None:
            raise ConnectionError("voxserve WebSocket is not connected")
        await self._websocket.send(json.dumps(message))

    async def _receive_messages(self) -> None:
        assert self._websocket is not None
        async for raw in self._websocket:
            if isinstance(raw, bytes):
                await self._on_audio(raw)
            else:
                await self._on_event(json.loads(raw))

    async def _on_audio(self, audio: bytes) -> None:
        chunk, self._chunk = self._chunk, None
        if chunk is None or not self.audio_context_available(chunk["context_id"]):
            return  # audio of a context already interrupted
        context_id = chunk["context_id"]
        timings = words_of(chunk.get("words"))
        # word frames show the text as sent ("$5", not "five dollars")
        words = [(text, w.start_s) for w, text in source_words(timings, self._sent.get(context_id, ""))]
        if words:
            await self.add_word_timestamps(words, context_id)
        if audio:
            await self.stop_ttfb_metrics()
            frame = TTSAudioRawFrame(audio=audio, sample_rate=self.sample_rate, num_channels=1, context_id=context_id)
            await self.append_to_audio_context(context_id, frame)

    async def _on_event(self, event: dict[str, Any]) -> None:
        kind, context_id = event.get("type"), event.get("context_id")
        if kind == "chunk":
            self._chunk = event
        elif kind == "done" and context_id:
            self._sent.pop(context_id, None)
            if not self.audio_context_available(context_id):
                return  # interrupted: Pipecat has let the context go
            await self.append_to_audio_context(context_id, TTSStoppedFrame(context_id=context_id))
            await self.remove_audio_context(context_id)
        elif kind == "error" and event.get("code") not in ("context_expired", "unknown_context"):
            # a failed context is followed by its done; unknown_context: a late message to an interrupted one
            await self.push_error(error_msg=f"voxserve: {event.get('code')}: {event.get('message')}")

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        """Send one aggregated sentence to the turn's context and speak it now (audio comes on the
        receive task)."""
        try:
            if not self._websocket or self._websocket.state is State.CLOSED:
                await self._connect()
            await self._send(type="text", context_id=context_id, text=text)
            self._sent[context_id] = self._sent.get(context_id, "") + text
            await self._send(type="flush", context_id=context_id)
            await self.start_tts_usage_metrics(text)
        except Exception as exc:
            yield ErrorFrame(error=f"voxserve: {exc}")
            yield TTSStoppedFrame(context_id=context_id)
            return
        yield None

    async def flush_audio(self, context_id: str | None = None) -> None:
        """The turn's text is complete: close its context (its remaining audio, then ``done``)."""
        target = context_id or self.get_active_audio_context_id()
        if target and self._websocket:
            await self._send(type="close", context_id=target)

    async def on_audio_context_interrupted(self, context_id: str) -> None:
        """Barge-in: cancel this context only; the socket stays open for the next turn."""
        await self.stop_all_metrics()
        if context_id and self._websocket:
            await self._send(type="cancel", context_id=context_id)
        await super().on_audio_context_interrupted(context_id)
