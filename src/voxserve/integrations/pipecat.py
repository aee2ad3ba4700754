"""A Pipecat TTS service backed by a voxserve server (extra ``voxserve[pipecat]``).

It speaks protocol 2 over one WebSocket (docs/protocol.md): every Pipecat turn is a voxserve context,
each piece of text is sent to it as it is aggregated (spoken at once where it ends a sentence), and the
turn's end closes it. On an interruption only that context is cancelled; the socket stays open for the
next turn, so barge-in needs no reconnect. Word timings come back with each audio chunk and become
Pipecat word timestamps, each word with the punctuation around it as sent.

A turn is spoken in full or fails with an error frame: it is sent again in a new context after the
server's ``retry_after_s`` when the server was full, and goes on in a new context when the server
closed one that waited too long for text (``VOXSERVE_CONTEXT_IDLE_S``). A server still loading (a
restart) is waited for at connect. A context opened after the voice, language or speed changed
(``TTSUpdateSettingsFrame``) is configured with them.

    from voxserve.integrations.pipecat import VoxServeTTSService
    tts = VoxServeTTSService(base_url="http://127.0.0.1:8000", voice="af_heart")
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from pipecat.frames.frames import ErrorFrame, Frame, TTSAudioRawFrame, TTSStoppedFrame
from pipecat.processors.frame_processor import FrameProcessorSetup
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import WebsocketTTSService
from websockets.protocol import State

from voxserve.client.types import SourceWords, VoxServeError, words_of

READY_WAIT_S = 60.0  # how long a connect waits for a server that says it is not ready yet (loading)
TURN_RETRIES = 3  # times a turn is sent again to a server that was full
# what ends a sentence, as the server's segmenter reads it (voxserve.text.segment, which a plugin's venv
# cannot import): a piece of text ending so is spoken at once
_SENTENCE_END = tuple(".!?;:…。！？；")
_GOES_ON = ("overloaded", "context_expired")  # a context's errors that its done follows, and the turn may outlive


@dataclass
class _Turn:
    """One Pipecat turn (its context id), spoken by one voxserve context at a time."""

    text: str = ""  # all its text so far: sent again in full when the server was full
    context: str | None = None  # the voxserve context speaking it now
    opened: int = 0  # voxserve contexts opened for it (an id that has ended cannot be used again)
    attempts: int = 0  # times it was sent again
    ended: bool = False  # its text is complete (flush_audio)
    waiting: bool = False  # to be sent again after the server's retry_after_s: its text is held
    expired: bool = False  # the server closed its context for want of text: its next text waits for the done
    held: str = ""  # text that came while it was expired: sent in a new context once the old one is done
    dead: bool = False  # failed: its error is out, and its further text is not sent
    heard: bool = False  # some of its audio has gone out


@dataclass
class _Spoken:
    """One voxserve context: the turn it speaks, the text sent to it (what its words' characters index),
    and how it ended."""

    turn: str
    text: str = ""
    words: SourceWords = field(default_factory=SourceWords)
    failure: VoxServeError | None = None  # full or expired: its done follows


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
        self._defaults: dict[str, Any] = {}  # the connection's config: contexts that differ send their own
        self._turns: dict[str, _Turn] = {}  # by Pipecat context id
        self._spoken: dict[str, _Spoken] = {}  # by voxserve context id

    def can_generate_metrics(self) -> bool:
        return True

    async def setup(self, setup: FrameProcessorSetup) -> None:
        await super().setup(setup)
        await self._connect()

    async def _connect(self) -> None:
        await super()._connect()
        await self._connect_websocket()
        # a receive task that gave up (the server was down past Pipecat's reconnects) is started anew
        if self._websocket and (not self._receive_task or self._receive_task.done()):
            self._receive_task = self.create_task(self._receive_task_handler(self._report_error))

    async def _disconnect(self) -> None:
        await super()._disconnect()
        if self._receive_task:
            await self.cancel_task(self._receive_task)
            self._receive_task = None
        await self._disconnect_websocket()

    def _config(self) -> dict[str, Any]:
        """The options a context is spoken with now (they follow ``TTSUpdateSettingsFrame``)."""
        return {
            "voice": self._settings.voice,
            "lang": self._settings.language,
            "speed": self._speed,
            "format": "pcm",
            "sample_rate": self.sample_rate,
            "word_timings": True,
        }

    async def _connect_websocket(self) -> None:
        if self._websocket and self._websocket.state is State.OPEN:
            return
        try:
            deadline = time.monotonic() + READY_WAIT_S
            while True:  # a server that is loading (just restarted) or full asks to be asked again
                self._websocket = await self._websocket_connect(self._url, additional_headers=self._headers)
                self._defaults = self._config()
                await self._websocket.send(json.dumps({"type": "config", "protocol": 2, **self._defaults}))
                ready = json.loads(await self._websocket.recv())
                if ready.get("type") == "ready":
                    break
                refusal = VoxServeError.from_event(ready)
                await self._websocket.close()
                wait = refusal.retry_after_s or 1.0
                if not refusal.retryable or time.monotonic() + wait > deadline:
                    raise ConnectionError(f"voxserve refused the config: {refusal.message}")
                await asyncio.sleep(wait)
            self._chunk = None
            await self._call_event_handler("on_connected")
            await self._resume()
        except Exception as exc:
            await self.push_error(error_msg=f"voxserve connection failed: {exc}", exception=exc)
            self._websocket = None
            await self._call_event_handler("on_connection_error", f"{exc}")

    async def _resume(self) -> None:
        """On a new socket (the last one was lost: a server restart, say), the contexts of the old one are
        gone: a turn none of whose audio went out is sent again in full; one partly heard ends with an error."""
        self._spoken.clear()
        for turn_id, turn in list(self._turns.items()):
            if turn.context is None or turn.dead:
                continue
            turn.context, turn.expired, turn.held = None, False, ""  # its whole text goes again, or none
            if turn.heard:
                turn.dead = True
                await self.push_error(error_msg="voxserve: the connection was lost while the turn was spoken")
                await self._end_turn(turn_id)
                continue
            await self._speak(turn_id, turn, turn.text, flush=True)
            if turn.ended:
                await self._close(turn_id, turn)

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
        spoken = self._spoken.get(chunk["context_id"]) if chunk is not None else None
        if chunk is None or spoken is None or not self.audio_context_available(spoken.turn):
            return  # audio of a turn already interrupted
        # word frames show the text as sent ("$5", not "five dollars")
        timed = [(text, w.start_s) for w, text in spoken.words(words_of(chunk.get("words")), spoken.text)]
        if timed:
            await self.add_word_timestamps(timed, spoken.turn)
        if audio:
            await self.stop_ttfb_metrics()
            if (turn := self._turns.get(spoken.turn)) is not None:
                turn.heard = True
            frame = TTSAudioRawFrame(audio=audio, sample_rate=self.sample_rate, num_channels=1, context_id=spoken.turn)
            await self.append_to_audio_context(spoken.turn, frame)

    async def _on_event(self, event: dict[str, Any]) -> None:
        kind, code = event.get("type"), event.get("code")
        spoken = self._spoken.get(event.get("context_id") or "")
        if kind == "chunk":
            self._chunk = event
        elif kind == "error" and spoken is not None and code in _GOES_ON:
            spoken.failure = VoxServeError.from_event(event)  # its done follows, and says what becomes of the turn
            turn = self._turns.get(spoken.turn)
            if code == "context_expired" and turn is not None and turn.context == event["context_id"]:
                turn.expired = True  # text sent to it now would be refused: it waits for the done
        elif kind == "error" and spoken is not None:  # refused, or failed: the turn is over
            del self._spoken[event["context_id"]]
            turn = self._turns.get(spoken.turn)
            if turn is not None and turn.context == event["context_id"]:
                turn.dead = True
                await self.push_error(error_msg=f"voxserve: {code}: {event.get('message')}")
                await self._end_turn(spoken.turn)
        elif kind == "error" and code != "unknown_context":  # unknown: a late message to an ended one
            await self.push_error(error_msg=f"voxserve: {code}: {event.get('message')}")
        elif kind == "done" and spoken is not None:
            del self._spoken[event["context_id"]]
            await self._context_done(event["context_id"], spoken)

    async def _context_done(self, context: str, spoken: _Spoken) -> None:
        """A voxserve context has ended: end its turn, or go on with the turn in a new context (the server
        was full, or closed it for want of text while the turn goes on)."""
        turn = self._turns.get(spoken.turn)
        if turn is None or turn.context != context:
            return  # an earlier context of the turn, or one interrupted
        turn.context = None
        turn.expired = False
        failure = spoken.failure  # (an interrupted turn is gone from _turns: it is not sent again)
        if failure is not None and failure.code == "overloaded":
            if turn.attempts < TURN_RETRIES:
                turn.attempts += 1
                turn.waiting = True
                self.create_task(self._again(spoken.turn, turn, failure.retry_after_s or 1.0))
                return
            turn.dead = True
            await self.push_error(error_msg=f"voxserve: {failure.code}: {failure.message}")
        elif failure is not None and self.audio_context_available(spoken.turn) and (turn.held or not turn.ended):
            # closed by the server for want of text while the turn goes on: what came meanwhile opens a new
            # context now (its audio follows the old one's), and the turn's next text goes there
            held, turn.held = turn.held, ""
            if held:
                await self._go_on(spoken.turn, turn, held)
            return
        await self._end_turn(spoken.turn)

    async def _end_turn(self, turn_id: str) -> None:
        """The turn is over: its last audio, then the stop."""
        turn = self._turns.get(turn_id)
        if turn is not None and not turn.dead:  # a dead turn is kept until its end, to drop its text
            del self._turns[turn_id]
        if self.audio_context_available(turn_id):
            await self.append_to_audio_context(turn_id, TTSStoppedFrame(context_id=turn_id))
            await self.remove_audio_context(turn_id)

    async def _again(self, turn_id: str, turn: _Turn, wait_s: float) -> None:
        """Send the whole turn again, in a new context, after the server's ``retry_after_s``."""
        await asyncio.sleep(wait_s)
        if self._turns.get(turn_id) is not turn or not turn.waiting:
            return  # interrupted meanwhile
        turn.waiting = False
        await self._go_on(turn_id, turn, turn.text)

    async def _go_on(self, turn_id: str, turn: _Turn, text: str) -> None:
        """Send ``text`` of the turn in a new context, closed at once when the turn's text is complete; a
        failure ends the turn with an error."""
        try:
            await self._speak(turn_id, turn, text, flush=True)
            if turn.ended:
                await self._close(turn_id, turn)
        except Exception as exc:
            turn.dead = True
            await self.push_error(error_msg=f"voxserve: {exc}", exception=exc)
            await self._end_turn(turn_id)

    async def _speak(self, turn_id: str, turn: _Turn, text: str, flush: bool) -> None:
        """Send ``text`` to the turn's voxserve context, opening one (with its own config when the
        settings changed since the connection opened) if it has none now."""
        if turn.context is None:
            turn.opened += 1
            turn.context = turn_id if turn.opened == 1 else f"{turn_id}~{turn.opened}"
            self._spoken[turn.context] = _Spoken(turn_id)
            config = self._config()
            if config != self._defaults:
                await self._send(type="config", context_id=turn.context, **config)
        context = turn.context
        await self._send(type="text", context_id=context, text=text)
        self._spoken[context].text += text
        if flush:
            await self._send(type="flush", context_id=context)

    async def _close(self, turn_id: str, turn: _Turn) -> None:
        if turn.context is None:  # the server closed its context and no text came since: nothing is left
            await self._end_turn(turn_id)
            return
        await self._send(type="close", context_id=turn.context)

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        """Send one aggregated piece of text to the turn's context; where it ends a sentence, ask for it to be
        spoken now (audio comes on the receive task). A piece that ends mid-sentence (token aggregation)
        is left to the server's own sentence buffering."""
        turn = self._turns.setdefault(context_id, _Turn())
        if turn.dead:  # its error is out already
            yield None
            return
        try:
            if not self._websocket or self._websocket.state is State.CLOSED:
                await self._connect()
                if self._websocket is None:  # refused (a wrong key, an unknown voice): its error is out
                    turn.dead = True
                    yield TTSStoppedFrame(context_id=context_id)
                    return
            turn.text += text
            if turn.expired:  # sent once its expired context is done
                turn.held += text
            elif not turn.waiting:  # else it goes with the rest of the turn
                await self._speak(context_id, turn, text, flush=text.rstrip().endswith(_SENTENCE_END))
            await self.start_tts_usage_metrics(text)
        except Exception as exc:
            turn.dead = True  # one error for the turn, not one for each of its sentences
            yield ErrorFrame(error=f"voxserve: {exc}")
            yield TTSStoppedFrame(context_id=context_id)
            return
        yield None

    async def flush_audio(self, context_id: str | None = None) -> None:
        """The turn's text is complete: close its context (its remaining audio, then ``done``)."""
        target = context_id or self.get_active_audio_context_id()
        turn = self._turns.get(target or "")
        if target is None or turn is None:
            return
        turn.ended = True
        if turn.dead:
            del self._turns[target]
        elif not turn.waiting and not turn.expired and self._websocket:  # else closed once sent again
            await self._close(target, turn)

    async def on_audio_context_interrupted(self, context_id: str) -> None:
        """Barge-in: cancel this turn's context only; the socket stays open for the next turn."""
        await self.stop_all_metrics()
        turn = self._turns.pop(context_id, None) if context_id else None
        if turn is not None and turn.context is not None and self._websocket:
            await self._send(type="cancel", context_id=turn.context)
        await super().on_audio_context_interrupted(context_id)
