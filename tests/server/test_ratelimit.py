from __future__ import annotations

import pytest

from voxserve.errors import RateLimited
from voxserve.server.ratelimit import RateLimiter, TokenBuckets


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bucket_burst_then_refill() -> None:
    clock = Clock()
    buckets = TokenBuckets(capacity=3, per_second=1.0, clock=clock)
    for _ in range(3):
        buckets.take("a")
    with pytest.raises(RateLimited) as info:
        buckets.take("a")
    assert info.value.retry_after_s == pytest.approx(1.0)
    buckets.take("b")  # other keys are independent
    clock.now += 1.0
    buckets.take("a")
    with pytest.raises(RateLimited):
        buckets.take("a")


def test_idle_buckets_are_dropped() -> None:
    clock = Clock()
    buckets = TokenBuckets(capacity=2, per_second=1.0, clock=clock)
    for key in range(50):
        buckets.take(str(key))
    clock.now += 10
    buckets.take("new")
    assert len(buckets._buckets) == 1


def test_limiter_per_key_and_per_ip() -> None:
    clock = Clock()
    limiter = RateLimiter(per_minute=2, clock=clock)
    limiter.check("key:a", "10.0.0.1")
    limiter.check("key:a", "10.0.0.2")
    with pytest.raises(RateLimited):  # the key is spent, whatever the IP
        limiter.check("key:a", "10.0.0.3")
    limiter.check("anonymous", "10.0.0.4")
    limiter.check("anonymous", "10.0.0.4")
    with pytest.raises(RateLimited):  # the IP is spent
        limiter.check("anonymous", "10.0.0.4")


def test_zero_disables() -> None:
    limiter = RateLimiter(per_minute=0)
    for _ in range(1000):
        limiter.check("anonymous", "1.2.3.4")
