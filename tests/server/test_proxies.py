"""Whom a request comes from behind a load balancer (voxserve.server.proxies)."""

from __future__ import annotations

import pytest

from voxserve.server.proxies import client_address

LOCAL = ["127.0.0.1", "::1"]


@pytest.mark.parametrize(
    ("peer", "forwarded", "trusted", "client"),
    [
        ("127.0.0.1", "203.0.113.7", LOCAL, "203.0.113.7"),  # through the local nginx
        ("198.51.100.2", "203.0.113.7", LOCAL, "198.51.100.2"),  # an untrusted peer can't name another
        ("127.0.0.1", "203.0.113.9, 203.0.113.7", LOCAL, "203.0.113.7"),  # the client's own header is not believed
        ("10.0.3.4", "203.0.113.7, 10.0.9.9", ["10.0.0.0/8"], "203.0.113.7"),  # two trusted hops
        ("10.0.3.4", "203.0.113.7", ["*"], "203.0.113.7"),
        ("127.0.0.1", None, LOCAL, "127.0.0.1"),
        ("127.0.0.1", "127.0.0.1", LOCAL, "127.0.0.1"),
    ],
)
def test_client_address(peer: str, forwarded: str | None, trusted: list[str], client: str) -> None:
    assert client_address(peer, forwarded, trusted) == client
