"""``voxserve eval``'s progress line: rewritten in place on a terminal, whole lines in a log."""

from __future__ import annotations

import io

import pytest

from voxserve.evaluation.progress import Progress


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def _run(monkeypatch: pytest.MonkeyPatch, tty: bool, total: int, quiet: bool = False) -> str:
    stream = _Stream(tty)
    monkeypatch.setattr("sys.stderr", stream)
    progress = Progress("eval en af_heart", total, quiet)
    for k in range(1, total + 1):
        progress.step(k)
    progress.done()
    return stream.getvalue()


def test_a_log_gets_whole_lines_at_every_tenth_and_the_last_step(monkeypatch: pytest.MonkeyPatch) -> None:
    written = _run(monkeypatch, tty=False, total=25)
    assert "\r" not in written
    assert written.splitlines() == [
        f"eval en af_heart: {k}/25" for k in (2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 25)
    ]
    assert _run(monkeypatch, tty=False, total=3).splitlines() == [f"eval en af_heart: {k}/3" for k in (1, 2, 3)]


def test_a_terminal_gets_one_line_rewritten_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    written = _run(monkeypatch, tty=True, total=3)
    assert written == "\reval en af_heart: 1/3\reval en af_heart: 2/3\reval en af_heart: 3/3\n"
    assert _run(monkeypatch, tty=True, total=3, quiet=True) == ""
