"""Token-bucket rate limits per API key and per client IP."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from voxserve.errors import RateLimited


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class TokenBuckets:
    """One bucket per key: ``capacity`` tokens, refilled at ``per_second``; ``take`` spends one.

    Buckets idle long enough to be full again are dropped, so memory stays bounded by active clients.
    """

    def __init__(self, capacity: float, per_second: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = capacity
        self.per_second = per_second
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._last_sweep = clock()

    def take(self, key: str, what: str = "requests") -> None:
        """Spend a token for ``key``; raise :class:`RateLimited` with a retry hint when none is left."""
        bucket = self._refilled(key)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return
        wait = (1.0 - bucket.tokens) / self.per_second
        raise RateLimited(f"too many {what}; retry in {wait:.1f} s", retry_after_s=wait)

    def wait(self, key: str) -> float:
        """Spend a token for ``key`` now, borrowing it when none is left: the seconds to wait before
        acting, so that a caller who waits out each answer keeps to the rate."""
        bucket = self._refilled(key)
        bucket.tokens -= 1.0
        return max(0.0, -bucket.tokens / self.per_second)

    def _refilled(self, key: str) -> _Bucket:
        now = self._clock()
        self._sweep(now)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(self.capacity, now)
        bucket.tokens = min(self.capacity, bucket.tokens + (now - bucket.stamp) * self.per_second)
        bucket.stamp = now
        return bucket

    def _sweep(self, now: float) -> None:
        full_after = self.capacity / self.per_second
        if now - self._last_sweep < full_after:
            return
        self._last_sweep = now
        for key in [k for k, b in self._buckets.items() if now - b.stamp >= full_after]:
            del self._buckets[key]


class RateLimiter:
    """Requests per minute, checked both per caller identity and per client IP (0 = off)."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.enabled = per_minute > 0
        self._buckets = TokenBuckets(float(per_minute), per_minute / 60.0, clock) if self.enabled else None

    def check(self, principal_id: str, client_ip: str | None) -> None:
        if self._buckets is None:
            return
        if principal_id != "anonymous":
            self._buckets.take(principal_id)
        if client_ip:
            self._buckets.take("ip:" + client_ip)
