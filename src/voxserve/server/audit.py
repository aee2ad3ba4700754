"""The audit log: one JSON line per utterance (one HTTP or gRPC request, one WebSocket utterance) on
the ``voxserve.audit`` logger, and appended to ``Settings.audit_log_file`` when set.

A line says who (``client``: the API key's id ``key:<digest>``, ``jwt:<subject>``, or the address when
authentication is off; ``ip`` the address), over which transport, with which voice, how many
characters, how many seconds of audio, how it ended and how long its listener waited on stalls. It
never holds a credential (only the key's digest) and holds the text only with ``log_text``.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import datetime, timezone
from pathlib import Path

audit_log = logging.getLogger("voxserve.audit")
_files: set[Path] = set()
_lock = threading.Lock()


def open_file(path: Path | None) -> None:
    """Also write the audit lines to ``path`` (once per path and process; the directory must exist)."""
    if path is None:
        return
    path = path.resolve()
    with _lock:
        if path in _files:
            return
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(message)s"))
        audit_log.addHandler(handler)
        audit_log.setLevel(logging.INFO)
        _files.add(path)


def write(fields: dict[str, object]) -> None:
    line = {"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), **fields}
    audit_log.info(json.dumps(line, ensure_ascii=False))
