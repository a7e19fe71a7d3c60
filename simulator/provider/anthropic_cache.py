"""Anthropic prompt caching on the virtual clock (P1–P3).

Entries are keyed by a prefix hash (see :mod:`simulator.provider.render`) and live for
their TTL (5m = 300 s, 1h = 3600 s) of *virtual* time, refreshed free of charge on every
read. For each breakpoint the store looks for a live entry at that block and up to
``lookback`` (20) blocks before it; the longest hit is read. Every breakpoint beyond the
hit whose prefix reaches the model's minimum cacheable length is written. A write becomes
readable only after the request that wrote it (or, while writes are held, after
:meth:`AnthropicCache.release`), so parallel requests all miss.

Usage split (mixed TTLs, §1.5): A = tokens read, B = end of the last 1h write (A if none),
C = end of the last write (A if none); 1h writes = B − A, 5m writes = C − B,
``input_tokens`` = total − max(A, C).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simulator.provider.clock import VirtualClock

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
#: How many blocks before a breakpoint are searched for an earlier entry (the ~20-block lookback).
LOOKBACK_BLOCKS = 20


@dataclass
class CacheUsage:
    """Prompt-side accounting of one request, in tokens.

    Attributes:
        total: all prompt tokens (= input + read + write_5m + write_1h).
        read: ``cache_read_input_tokens`` (OpenAI route: ``cached_tokens``).
        write_5m / write_1h: ``cache_creation.ephemeral_5m_input_tokens`` / ``..._1h_...``.
        input: uncached input tokens (Anthropic ``input_tokens``).
    """

    total: int
    read: int = 0
    write_5m: int = 0
    write_1h: int = 0

    @property
    def write(self) -> int:
        """``cache_creation_input_tokens`` (both TTLs)."""
        return self.write_5m + self.write_1h

    @property
    def input(self) -> int:
        """Uncached prompt tokens."""
        return self.total - self.read - self.write


class AnthropicCache:
    """Prefix store: explicit breakpoints, lookback, minimums and TTLs on a :class:`VirtualClock`.

    Args:
        clock: the provider's virtual clock (seconds).
        lookback: blocks searched before each breakpoint (default :data:`LOOKBACK_BLOCKS`).
    """

    def __init__(self, clock: VirtualClock, lookback: int = LOOKBACK_BLOCKS) -> None:
        self.clock = clock
        self.lookback = lookback
        self.entries: dict[bytes, list[float]] = {}  # key -> [expires_at, ttl_seconds, tokens]
        self.held = False
        self._pending: list[tuple[bytes, float, float, int]] = []

    def live(self, key: bytes) -> bool:
        """True when ``key`` names an entry that has been written and has not expired."""
        e = self.entries.get(key)
        return e is not None and e[0] > self.clock.now()

    def apply(
        self,
        chain: Sequence[bytes],
        cum: Sequence[int],
        total: int,
        breakpoints: Sequence[tuple[int, str, str]],
        min_tokens: int,
    ) -> CacheUsage:
        """Read and write the cache for one request; returns its :class:`CacheUsage`.

        Args:
            chain / cum: prefix hashes and cumulative tokens per block (from the renderer).
            total: prompt tokens of the request.
            breakpoints: ``(block index, ttl, where)`` in render order, already validated.
            min_tokens: the model's minimum cacheable prefix (tokens).
        """
        usage = CacheUsage(total=total)
        if not breakpoints:
            return usage
        now = self.clock.now()
        entries = self.entries
        hit_pos = -1
        for b, _ttl, _w in breakpoints:
            for i in range(b, max(-1, b - self.lookback - 1), -1):
                e = entries.get(chain[i])
                if e is not None and e[0] > now:
                    if i > hit_pos:
                        hit_pos = i
                    break
        a = 0
        if hit_pos >= 0:
            e = entries[chain[hit_pos]]
            e[0] = now + e[1]  # free refresh on read
            a = cum[hit_pos]
        b_tok = c_tok = a
        writes = []
        for b, ttl, _w in breakpoints:
            t = cum[b]
            if t <= a or t < min_tokens:
                continue
            writes.append((chain[b], TTL_SECONDS[ttl], t))
            if ttl == "1h":
                b_tok = max(b_tok, t)
            c_tok = max(c_tok, t)
        usage.read = a
        usage.write_1h = b_tok - a
        usage.write_5m = c_tok - b_tok
        for key, ttl_s, t in writes:
            if self.held:
                self._pending.append((key, now + ttl_s, ttl_s, t))
            else:
                self._store(key, now + ttl_s, ttl_s, t)
        if len(entries) > 50_000:
            self.purge()
        return usage

    def _store(self, key: bytes, expires: float, ttl_s: float, t: int) -> None:
        old = self.entries.get(key)
        if old is not None and old[0] > expires:
            return
        self.entries[key] = [expires, ttl_s, t]

    def hold(self) -> None:
        """Start holding writes: requests from now on do not see each other's writes (a burst)."""
        self.held = True

    def release(self) -> None:
        """Stop holding; the held writes become readable now."""
        self.held = False
        for item in self._pending:
            self._store(*item)
        self._pending.clear()

    def purge(self) -> int:
        """Drop expired entries; returns how many were dropped."""
        now = self.clock.now()
        dead = [k for k, e in self.entries.items() if e[0] <= now]
        for k in dead:
            del self.entries[k]
        return len(dead)

    def reset(self) -> None:
        """Forget every entry (held ones too)."""
        self.entries.clear()
        self._pending.clear()
        self.held = False
