"""The one exception tree of voxserve, and its mapping to protocol codes.

Engines and the text frontend raise these; the HTTP, WebSocket and gRPC layers
translate them with :func:`http_status`, :func:`ws_close_code` and
:func:`grpc_status_name` and nothing else.
"""

from __future__ import annotations


class VoxError(Exception):
    """Base class. ``code`` is a stable machine-readable identifier."""

    code = "internal_error"

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_s = retry_after_s


class InvalidInput(VoxError):
    """The request is malformed or asks for something impossible (bad text, speed, format)."""

    code = "invalid_request"


class UnknownVoice(InvalidInput):
    code = "unknown_voice"


class UnsupportedLanguage(InvalidInput):
    code = "unsupported_language"


class InputTooLarge(InvalidInput):
    code = "input_too_large"


class TooManyContexts(InvalidInput):
    """A multi-context connection already has ``max_contexts`` contexts open."""

    code = "too_many_contexts"


class UnknownContext(InvalidInput):
    """A message names a context this connection never opened, or one that has ended."""

    code = "unknown_context"


class ContextExpired(InvalidInput):
    """A context got no message and made no audio for ``context_idle_s``; the server closed it."""

    code = "context_expired"


class Unauthorized(VoxError):
    code = "unauthorized"


class Forbidden(VoxError):
    code = "forbidden"


class RateLimited(VoxError):
    code = "rate_limited"


class Overloaded(VoxError):
    """No capacity now (stream cap and queue full, or draining); retry later."""

    code = "overloaded"


class ShuttingDown(Overloaded):
    """The server is draining before it stops; retry (another replica takes the request)."""

    code = "shutting_down"


class ClientTooSlow(VoxError):
    """The client took no audio for too long; its stream was dropped to free the slot for others."""

    code = "client_too_slow"


class IdleTimeout(ClientTooSlow):
    """A connection sent nothing (no credentials, no message) for longer than the server waits."""

    code = "idle_timeout"


class NotReady(VoxError):
    code = "not_ready"


class Cancelled(VoxError):
    code = "cancelled"


class ModelError(VoxError):
    """A model file is missing, corrupt, or failed to load."""

    code = "model_error"


class EngineFailure(VoxError):
    """The model failed while synthesizing."""

    code = "engine_failure"


_HTTP = {
    InputTooLarge: 413,
    InvalidInput: 400,
    Unauthorized: 401,
    Forbidden: 403,
    RateLimited: 429,
    ShuttingDown: 503,
    Overloaded: 503,
    ClientTooSlow: 408,
    NotReady: 503,
    Cancelled: 499,
    ModelError: 500,
    EngineFailure: 500,
}

# WebSocket close codes: 1001 going away, 1008 policy violation, 1009 too big, 1011 internal, 1013 try again later,
# 4001/4003 application auth codes, 4029 rate limited.
_WS = {
    InputTooLarge: 1009,
    InvalidInput: 1008,
    Unauthorized: 4001,
    Forbidden: 4003,
    RateLimited: 4029,
    ShuttingDown: 1001,
    Overloaded: 1013,
    ClientTooSlow: 1008,
    NotReady: 1013,
    Cancelled: 1000,
    ModelError: 1011,
    EngineFailure: 1011,
}

_GRPC = {
    InputTooLarge: "INVALID_ARGUMENT",
    InvalidInput: "INVALID_ARGUMENT",
    Unauthorized: "UNAUTHENTICATED",
    Forbidden: "PERMISSION_DENIED",
    RateLimited: "RESOURCE_EXHAUSTED",
    ShuttingDown: "UNAVAILABLE",
    Overloaded: "RESOURCE_EXHAUSTED",
    ClientTooSlow: "ABORTED",
    NotReady: "UNAVAILABLE",
    Cancelled: "CANCELLED",
    ModelError: "INTERNAL",
    EngineFailure: "INTERNAL",
}


def _lookup(table: dict[type[VoxError], object], exc: BaseException, default: object) -> object:
    for cls in type(exc).__mro__:
        if cls in table:
            return table[cls]
    return default


def http_status(exc: BaseException) -> int:
    value = _lookup(_HTTP, exc, 500)  # type: ignore[arg-type]
    assert isinstance(value, int)
    return value


def ws_close_code(exc: BaseException) -> int:
    value = _lookup(_WS, exc, 1011)  # type: ignore[arg-type]
    assert isinstance(value, int)
    return value


def grpc_status_name(exc: BaseException) -> str:
    """Name of the ``grpc.StatusCode`` member (kept as a string so engines never import grpc)."""
    value = _lookup(_GRPC, exc, "INTERNAL")  # type: ignore[arg-type]
    assert isinstance(value, str)
    return value


def _classes(cls: type[VoxError] = VoxError) -> list[type[VoxError]]:
    """``cls`` and every class below it, parents first."""
    return [cls] + [c for sub in cls.__subclasses__() for c in _classes(sub)]


def status_of(code: str | None = None, close: int | None = None) -> int | None:
    """The HTTP status of an error known only by its ``code`` (an error event's) or the WebSocket ``close``
    code it ended a socket with, as the tables above give them; None for neither (a close that names no
    error: 1000, or 1006, a lost connection). For a client told of an error by a WebSocket, which must
    report it to a framework in HTTP terms (the LiveKit plugin)."""
    for cls in _classes():
        if cls.code == code or (close not in (None, 1000) and _WS.get(cls) == close):
            return http_status(cls(""))
    return None


def error_body(exc: BaseException) -> dict[str, object]:
    """The JSON error body shared by every transport (OpenAI-style envelope)."""
    if isinstance(exc, VoxError):
        return {"error": {"code": exc.code, "message": exc.message, "type": type(exc).__name__}}
    return {"error": {"code": "internal_error", "message": "internal server error", "type": "InternalError"}}
