"""voxserve's Python client: the reference for its protocols (docs/protocol.md).

:class:`AsyncClient` (asyncio) and :class:`Client` (blocking) offer ``synthesize()`` (a whole utterance),
``stream()`` (audio frames as they are made, HTTP SSE) and ``connect()`` (a protocol-2 WebSocket whose
contexts take text with ``push_text``/``flush``/``end_input``/``cancel`` and yield :class:`AudioFrame`
values with word timings). ``synthesize()`` and ``stream()`` ask a busy server (HTTP 503) again after
the wait it names; a context the server has no room for raises a :class:`VoxServeError` that is
``retryable``, with that wait, and its text is the caller's to send again. This package imports nothing
of the server.
"""

from voxserve.client.aio import AsyncClient
from voxserve.client.sync import Client
from voxserve.client.types import AudioFrame, Done, Ready, Speech, Voice, VoxServeError, WordTiming

__all__ = ["AsyncClient", "AudioFrame", "Client", "Done", "Ready", "Speech", "Voice", "VoxServeError", "WordTiming"]
