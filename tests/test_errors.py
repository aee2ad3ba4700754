"""The exception tree's protocol codes, read back from a code or a WebSocket close (voxserve.errors)."""

from __future__ import annotations

import pytest

from voxserve.errors import Overloaded, Unauthorized, UnknownVoice, VoxError, http_status, status_of


@pytest.mark.parametrize("error", [Unauthorized(""), Overloaded(""), UnknownVoice("")])
def test_an_error_code_reads_back_as_its_http_status(error: VoxError) -> None:
    assert status_of(code=error.code) == http_status(error)


def test_a_close_code_reads_back_as_the_http_status_of_the_error_it_closes_for() -> None:
    assert [status_of(close=c) for c in (4001, 4003, 4029, 1013, 1001, 1008)] == [401, 403, 429, 503, 503, 400]
    assert status_of(close=1006) is None and status_of(close=1000) is None  # lost, or closed normally
    assert status_of(code="closed") is None and status_of() is None
