"""OpenAI automatic prompt caching on the virtual clock.

No markers: every request stores its prefix. A later request reads the longest live
prefix it shares, rounded down to the model's steps: nothing below 1024 tokens, then
1024 + k·128. Prefixes are compared at block granularity (a block is a message content
part, tool call or tool definition; see :mod:`simulator.provider.render`), so a prefix
that diverges inside a block matches only up to the end of the previous block.
Entries live ``retention`` seconds of virtual time after their last use.
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.provider.anthropic_cache import CacheUsage
from simulator.provider.clock import VirtualClock


def cached_length(prefix_tokens: int, minimum: int = 1024, step: int = 128) -> int:
    """Cacheable length of a shared prefix of ``prefix_tokens`` tokens.

    0 below ``minimum``, else ``minimum + k·step`` (tokens).
    """
    if prefix_tokens < minimum:
        return 0
    return minimum + ((prefix_tokens - minimum) // step) * step


class OpenAICache:
    """Automatic prefix cache keyed by block prefix hashes.

    Args:
        clock: the provider's virtual clock (seconds).
    """

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.entries: dict[bytes, float] = {}  # key -> expires_at
        self.held = False
        self._pending: dict[bytes, float] = {}

    def apply(
        self,
        chain: Sequence[bytes],
        cum: Sequence[int],
        total: int,
        minimum: int,
        step: int,
        retention: float,
    ) -> CacheUsage:
        """Read the longest live shared prefix, then store/refresh this request's prefixes.

        Returns a :class:`CacheUsage` with ``read`` = ``cached_tokens`` and no writes.
        """
        now = self.clock.now()
        entries = self.entries
        usage = CacheUsage(total=total)
        n = len(chain)
        # the first block whose prefix reaches the minimum
        lo = 0
        while lo < n and cum[lo] < minimum:
            lo += 1
        for i in range(n - 1, lo - 1, -1):
            exp = entries.get(chain[i])
            if exp is not None and exp > now:
                usage.read = cached_length(cum[i], minimum, step)
                break
        expires = now + retention
        target = self._pending if self.held else entries
        get = target.get
        for i in range(lo, n):
            key = chain[i]
            old = get(key)
            if old is None or old < expires:  # a longer retention is never shortened
                target[key] = expires
        if len(entries) > 200_000:
            self.purge()
        return usage

    def hold(self) -> None:
        """Hold writes (parallel burst): requests do not see each other's prefixes until release."""
        self.held = True

    def release(self) -> None:
        """Make held writes readable now."""
        self.held = False
        self.entries.update(self._pending)
        self._pending.clear()

    def purge(self) -> int:
        """Drop expired entries; returns how many."""
        now = self.clock.now()
        dead = [k for k, e in self.entries.items() if e <= now]
        for k in dead:
            del self.entries[k]
        return len(dead)

    def reset(self) -> None:
        """Forget every entry."""
        self.entries.clear()
        self._pending.clear()
        self.held = False
