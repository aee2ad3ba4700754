"""The progress line ``voxserve eval`` writes to stderr while it synthesizes and transcribes.

On a terminal one line is rewritten in place (``k/n`` as each sentence is done). Written to a file or a
CI log, carriage returns would pile every update onto one unreadable line, so there a whole line is
written at every tenth step and at the last.
"""

from __future__ import annotations

import sys

_EVERY = 10  # of the steps, away from a terminal: a line per tenth


class Progress:
    """``step(k)`` for each of ``total`` steps of the work ``label`` names; ``done()`` after the last."""

    def __init__(self, label: str, total: int, quiet: bool = False) -> None:
        self.label, self.total, self.quiet = label, total, quiet
        self._tty = sys.stderr.isatty()

    def step(self, k: int) -> None:
        if self.quiet:
            return
        line = f"{self.label}: {k}/{self.total}"
        if self._tty:
            print("\r" + line, end="", file=sys.stderr, flush=True)
        elif k == self.total or k % max(1, self.total // _EVERY) == 0:
            print(line, file=sys.stderr, flush=True)

    def done(self) -> None:
        if self._tty and not self.quiet:
            print(file=sys.stderr)
