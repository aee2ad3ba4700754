"""A throwaway stand-in speaking the documented WebSocket protocol with sine-wave PCM (development aid)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import numpy as np
import uvicorn
from fastapi import FastAPI, WebSocket
from fastapi.staticfiles import StaticFiles

WEB = Path(__file__).resolve().parents[2] / "src" / "voxserve" / "web"
VOICES = [
    {"id": "af_heart", "name": "Heart", "engine": "kokoro", "lang": "en-us", "gender": "female", "sample_rate": 24000},
    {
        "id": "en_US-joe-medium",
        "name": "Joe",
        "engine": "piper",
        "lang": "en-us",
        "gender": "male",
        "sample_rate": 22050,
    },
    {"id": "ff_siwis", "name": "Siwis", "engine": "kokoro", "lang": "fr", "gender": "female", "sample_rate": 24000},
]


def make_app() -> FastAPI:
    app = FastAPI()

    @app.get("/v1/voices")
    async def voices() -> dict[str, object]:
        return {"object": "list", "data": VOICES, "voices": [v["id"] for v in VOICES]}

    @app.websocket("/v1/tts/stream")
    async def stream(ws: WebSocket) -> None:
        await ws.accept()
        rate = 24000
        text = ""
        while True:
            msg = json.loads(await ws.receive_text())
            if msg["type"] == "config":
                if msg["voice"] not in {v["id"] for v in VOICES}:
                    await ws.send_json(
                        {"type": "error", "code": "unknown_voice", "message": f"no voice {msg['voice']}"}
                    )
                    continue
                rate = int(msg.get("sample_rate") or 24000)
                await ws.send_json({"type": "ready", "session_id": "x", "sample_rate": rate, "format": "pcm"})
            elif msg["type"] == "text":
                text += msg["text"]
            elif msg["type"] == "close":
                words = text.split()
                offset = 0.0
                for i, word in enumerate(words):
                    n = int(0.3 * rate)
                    t = np.arange(n) / rate
                    pcm = (0.3 * np.sin(2 * np.pi * 220 * t) * 32767).astype("<i2").tobytes()
                    meta = {
                        "type": "chunk",
                        "index": i,
                        "offset_s": offset,
                        "duration_s": 0.3,
                        "bytes": len(pcm),
                        "words": [{"word": word, "start_s": offset, "end_s": offset + 0.25}],
                    }
                    await ws.send_json(meta)
                    await ws.send_bytes(pcm)
                    offset += 0.3
                    await asyncio.sleep(0.05)
                await ws.send_json(
                    {
                        "type": "done",
                        "utterance": 0,
                        "audio_s": offset,
                        "chunks": len(words),
                        "ttfa_ms": 5.0,
                        "rtf": 0.1,
                        "cancelled": False,
                    }
                )
                text = ""
            elif msg["type"] == "cancel":
                await ws.send_json(
                    {
                        "type": "done",
                        "utterance": 0,
                        "audio_s": 0,
                        "chunks": 0,
                        "ttfa_ms": 0,
                        "rtf": 0,
                        "cancelled": True,
                    }
                )

    app.mount("/", StaticFiles(directory=WEB, html=True))
    return app


if __name__ == "__main__":
    uvicorn.run(make_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
