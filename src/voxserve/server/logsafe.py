"""Log hygiene for the whole process: no credential in any log line, and no client fault logged as a
server error.

Credentials reach logs by routes voxserve does not control: uvicorn logs each WebSocket's request line
(``?token=…`` included) at INFO and its headers (``authorization: Bearer …``) at DEBUG. So the rule is
applied where every record is made (the log record factory), whatever logger or handler it goes to:
a record whose text holds a credential is rewritten with the credential replaced by ``[redacted]``.
The patterns catch query credentials, ``Bearer`` and ``Authorization`` values and anything shaped like
a JWT; the configured API keys are also replaced wherever they appear.
"""

from __future__ import annotations

import logging
import re
import threading
import traceback
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
_PATTERNS = (
    # ?token=…, &api_key=…: a query credential (also in a logged URL)
    re.compile(r"(?i)([?&;](?:token|api[_-]?key|access[_-]?token|key|auth|jwt|password|secret)=)[^&\s\"'#]+"),
    re.compile(r"(?i)(\bbearer\s+)[^\s\"',]+"),
    re.compile(r"(?i)(\bauthorization['\"]?\s*[:=,]\s*['\"]?)(?!bearer\b)[^\s\"',]+"),
    re.compile(r"()\beyJ[\w-]*\.[\w-]+\.[\w-]*"),  # a JWT (its header always starts {" → eyJ)
)
_secrets: set[str] = set()
_installed = False
_lock = threading.Lock()


def redact(text: str) -> str:
    """``text`` with every credential it holds replaced by ``[redacted]``."""
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def _scrub(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a malformed record is logging's own error to report
        return
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, ()
    if record.exc_info and record.exc_info[1] is not None:
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        record.exc_text = redact(text)  # formatters print exc_text when it is set


class _ClientFaults(logging.Filter):
    """uvicorn logs an invalid-UTF-8 WebSocket frame as an ERROR with a traceback, although it is the
    client's fault (answered with close code 1007): log it at INFO, without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith("Invalid UTF-8 sequence received from client"):
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info, record.exc_text = None, None
            return logging.getLogger(record.name).isEnabledFor(logging.INFO)
        return True


def install(secrets: Iterable[str] = ()) -> None:
    """Redact every log record of this process from now on (idempotent); ``secrets`` are added to the
    strings always replaced (the configured API keys)."""
    global _installed
    with _lock:
        _secrets.update(s for s in secrets if len(s) >= 4)
        if _installed:
            return
        _installed = True
        make = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = make(*args, **kwargs)
            _scrub(record)
            return record

        logging.setLogRecordFactory(factory)
        logging.getLogger("uvicorn.error").addFilter(_ClientFaults())
