"""The OpenAPI document, made true to what the server sends.

FastAPI derives it from the route signatures, which cannot say that ``/v1/audio/speech`` answers with
audio or server-sent events, that every error is the JSON envelope of :func:`voxserve.errors.error_body`
with its own status (validation errors are 400, never 422), or that ``input``, ``speed``,
``sample_rate`` and ``response_format`` have this server's limits. This module fills those in once,
from the same constants and settings the checks use.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from voxserve.audio.encode import content_type, supported_formats
from voxserve.limits import MAX_OUTPUT_RATE, MAX_SPEED, MIN_OUTPUT_RATE, MIN_SPEED
from voxserve.server.http_routes import OPENAI_MODELS
from voxserve.settings import Settings

_ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "type": {"type": "string"}},
        }
    },
}
_WHY = {
    400: "The request is malformed or asks for something impossible (its message says what to fix).",
    401: "Missing or invalid credentials (when authentication is on).",
    403: "The credentials do not allow this.",
    404: "No such model.",
    408: "The request body did not arrive within the server's body timeout.",
    413: "The input is larger than the server's limit.",
    429: "Rate limited; retry after Retry-After seconds.",
    500: "The engine failed on this request (engine_failure); the server goes on serving others.",
    503: "Not ready, draining, or at capacity; retry (Retry-After when known).",
}
# status codes each operation can answer besides 200 (the rest is routing: 404/405, not per operation)
_ERRORS = {
    ("/v1/audio/speech", "post"): (400, 401, 403, 408, 413, 429, 500, 503),
    ("/v1/voices", "get"): (401, 403, 429, 503),
    ("/v1/audio/voices", "get"): (401, 403, 429, 503),
    ("/v1/models", "get"): (401, 403, 429, 503),
    ("/v1/models/{model_id}", "get"): (401, 403, 404, 429, 503),
    ("/readyz", "get"): (503,),
}


def install(app: FastAPI, settings: Settings) -> None:
    """Replace ``app.openapi`` with the corrected document (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, routes=app.routes)
            _correct(doc, settings)
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _correct(doc: dict[str, Any], settings: Settings) -> None:
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["Error"] = _ERROR_SCHEMA
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, operations in doc.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status in _ERRORS.get((path, method), ()):
                responses[str(status)] = {"description": _WHY.get(status, "Not ready."), "content": error}
    speech = doc["paths"]["/v1/audio/speech"]["post"]["responses"]["200"]
    types = sorted({content_type(name).split(";")[0] for name in supported_formats()})
    speech["description"] = "The audio, streamed as it is made; or server-sent events with stream_format=sse."
    speech["content"] = {t: {"schema": {"type": "string", "format": "binary"}} for t in types}
    event = {
        "type": "object",
        "required": ["data"],
        "properties": {"data": {"type": "string"}, "event": {"type": "string"}},
    }
    speech["content"]["text/event-stream"] = {"schema": event}  # each event: data = one JSON object
    doc["paths"]["/metrics"]["get"]["responses"]["200"]["content"] = {"text/plain": {"schema": {"type": "string"}}}
    body = schemas["SpeechBody"]["properties"]
    body["input"].update(minLength=1, maxLength=settings.max_input_chars)
    body["speed"].update(minimum=MIN_SPEED, maximum=MAX_SPEED)
    body["response_format"]["enum"] = list(supported_formats())
    rate = next(option for option in body["sample_rate"]["anyOf"] if option.get("type") == "integer")
    rate.update(minimum=MIN_OUTPUT_RATE, maximum=MAX_OUTPUT_RATE)
    for parameter in doc["paths"]["/v1/models/{model_id}"]["get"]["parameters"]:
        if parameter["name"] == "model_id":  # the models served: the OpenAI names and the engines loaded
            parameter["schema"]["enum"] = sorted(OPENAI_MODELS | set(settings.engines))
