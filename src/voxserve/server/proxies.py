"""The client behind a load balancer: trust ``X-Forwarded-For`` only from the proxies named in settings.

uvicorn does this for HTTP and WebSocket (``forwarded_allow_ips``); gRPC calls pass the same header as
metadata (nginx: ``grpc_set_header X-Forwarded-For``), read here. Per-client rate limits and access
logs then see the caller, not the proxy.
"""

from __future__ import annotations

import ipaddress


def _trusted(address: str, trusted: list[str]) -> bool:
    if "*" in trusted:
        return True
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for entry in trusted:
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


def client_address(peer: str, forwarded_for: str | None, trusted: list[str]) -> str:
    """The caller's address: ``peer``, unless it is a trusted proxy that says whom it forwards for.
    The chain is read from the right, skipping trusted hops, so a client can't pose as another by
    sending its own header."""
    if not forwarded_for or not _trusted(peer, trusted):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, trusted):
            return hop
    return hops[0] if hops else peer
