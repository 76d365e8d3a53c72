"""Counting in the "throttle" cache's Redis, each count one Lua script: Redis runs a script
alone, so requests in parallel — in any thread of any web process — cannot lose each other's
updates, as a read-then-write from Python does. The clock is Redis's own (`TIME`), the same
for every process. Callers decide what a Redis outage means for them."""

from __future__ import annotations

import uuid

from django.core.cache import caches

# A sliding window: the requests of the last `window` microseconds, one sorted-set member each.
# Refused requests are not recorded, so the set never holds more than `limit` members.
_SLIDING_WINDOW = """
local now = redis.call('TIME')
local now_us = tonumber(now[1]) * 1000000 + tonumber(now[2])
local window_us, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_us - window_us)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now_us, now_us .. ':' .. ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window_us / 1000))
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, window_us - (now_us - tonumber(oldest[2])))
"""

# A counter that lives `ttl` seconds from its first count.
_COUNT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count
"""


def window_hit(key: str, *, limit: int, window_s: float) -> float:
    """Record one request under `key` unless `limit` were recorded in the last `window_s`
    seconds: 0.0 when recorded, else how many seconds until the oldest leaves the window."""
    waited_us = _run(_SLIDING_WINDOW, key, int(window_s * 1_000_000), limit, uuid.uuid4().hex)
    return waited_us / 1_000_000


def count_hit(key: str, *, ttl_s: int) -> int:
    """Add one to the counter under `key` (created for `ttl_s` seconds); its new value."""
    return int(_run(_COUNT, key, ttl_s))


def _run(script: str, key: str, *args):
    cache = caches["throttle"]
    full_key = cache.make_key(key)  # the cache's own prefix and version, so cache.delete(key) clears it
    client = cache._cache.get_client(full_key, write=True)  # the redis-py client of Django's RedisCache, its pool shared
    return client.register_script(script)(keys=[full_key], args=list(args))
