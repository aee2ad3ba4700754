"""The blocking client: :class:`.aio.AsyncClient` run on a private event loop thread.

with Client("http://127.0.0.1:8000") as client:
    speech = client.synthesize("Hello.", voice="af_heart")
    with client.connect(voice="af_heart") as conn:
        ctx = conn.context()
        ctx.push_text("Hello there.")
        ctx.end_input()
        for frame in ctx:
            play(frame.audio)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

from voxserve.client import aio
from voxserve.client.types import AudioFrame, Done, Ready, Speech, Voice

T = TypeVar("T")


class _Loop:
    """An event loop in a daemon thread; ``run`` blocks until a coroutine there is done."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="voxserve-client")
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def iterate(self, iterator: AsyncIterator[T]) -> Iterator[T]:
        async def step() -> tuple[bool, T | None]:
            try:
                return True, await anext(iterator)
            except StopAsyncIteration:
                return False, None

        while True:
            more, item = self.run(step())
            if not more:
                return
            yield item  # type: ignore[misc]

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


class Client:
    """Blocking twin of :class:`.aio.AsyncClient` (same arguments, same results)."""

    def __init__(self, base_url: str, **options: Any) -> None:
        self._loop = _Loop()

        async def make() -> aio.AsyncClient:
            return aio.AsyncClient(base_url, **options)

        self._client = self._loop.run(make())

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._loop.run(self._client.aclose())
        self._loop.stop()

    def voices(self) -> list[Voice]:
        return self._loop.run(self._client.voices())

    def synthesize(self, text: str, **options: Any) -> Speech:
        return self._loop.run(self._client.synthesize(text, **options))

    def stream(self, text: str, **options: Any) -> Iterator[AudioFrame]:
        return self._loop.iterate(self._client.stream(text, **options))

    def connect(self, **config: Any) -> Connection:
        return Connection(self._loop, self._client.connect(**config))


class Connection:
    """Blocking twin of :class:`.aio.Connection`."""

    def __init__(self, loop: _Loop, inner: aio.Connection) -> None:
        self._loop = loop
        self._inner = inner

    def __enter__(self) -> Connection:
        self._loop.run(self._inner.__aenter__())
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.run(self._inner.aclose())

    @property
    def ready(self) -> Ready | None:
        return self._inner.ready

    @property
    def sample_rate(self) -> int:
        return self._inner.sample_rate

    def context(self, context_id: str | None = None) -> Context:
        return Context(self._loop, self._inner.context(context_id))


class Context:
    """Blocking twin of :class:`.aio.Context`."""

    def __init__(self, loop: _Loop, inner: aio.Context) -> None:
        self._loop = loop
        self._inner = inner
        self.id = inner.id

    @property
    def done(self) -> Done | None:
        return self._inner.done

    def push_text(self, text: str) -> None:
        self._loop.run(self._inner.push_text(text))

    def flush(self) -> None:
        self._loop.run(self._inner.flush())

    def end_input(self) -> None:
        self._loop.run(self._inner.end_input())

    def cancel(self) -> None:
        self._loop.run(self._inner.cancel())

    def __iter__(self) -> Iterator[AudioFrame]:
        return self._loop.iterate(aiter(self._inner))
