"""The door's memory rule, in a supervised child: its address space, its cap, and the engine call
that took a big part of it."""

from __future__ import annotations

import os

# -- the door's memory rule --------------------------------------------------------------
# An engine that allocates up to the child's memory cap and keeps what it got (on itself, in a
# module global) leaves the child unable to go on once its call returned: the kit's own next
# allocation fails, in a thread that may hold a lock, and the child sits in a futex wait with
# no engine call in flight, so the per-call limit does not apply. Two rules end that: a child
# whose address space is near its cap after a task retires (the next case gets a fresh one),
# and a child that says nothing for the per-call limit with no call in flight while at its cap
# is killed and reported (:class:`Hung` with ``stalled``), naming the last engine call.

#: The memory cap of this supervised child in bytes (0: none, or not in a child).
CAP = [0]
#: thread ident -> (method, address space at its start) of the engine calls in flight.
CALL_MEMORY: dict[int, list[tuple[str, int]]] = {}
#: Share of the cap one engine call must add to the address space to be named as the one
#: that took the memory (:func:`memory_taken_in`).
GREW_BY = 0.25
#: The last engine call that grew the address space by :data:`GREW_BY` of the cap or more.
GREW_IN = [""]


def memory_taken_in() -> str:
    """In a supervised child: the last engine method whose call grew the child's address space
    by a quarter of its cap or more ("" when none did)."""
    return GREW_IN[0]


#: Share of the memory cap at which a child counts as "at its cap" (address space).
NEAR_CAP = 0.9
#: Share of the cap past which a child retires after its answer (memory the engine kept).
RETIRE_AT = 0.6


_OWN_STATM: list = [None, None]  # [pid, fd] of this process's /proc/self/statm, kept open


def address_space(pid: int) -> int:
    """The address space of process ``pid`` in bytes (``/proc/<pid>/statm``; 0 where there is
    no such file: then the memory rule is off and the case cap is the backstop). This
    process's own file stays open (re-read with ``pread``)."""
    try:
        if pid == os.getpid():
            if _OWN_STATM[0] != pid:
                _OWN_STATM[:] = [pid, os.open("/proc/self/statm", os.O_RDONLY)]
            pages = int(os.pread(_OWN_STATM[1], 128, 0).split()[0])
        else:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                pages = int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def near_memory_cap(pid: int, memory_limit: int | None, share: float | None = None) -> bool:
    """True when ``pid``'s address space is past ``share`` of ``memory_limit`` (default: at
    its cap, :data:`NEAR_CAP`; a child checks itself against :data:`RETIRE_AT`)."""
    if not memory_limit:
        return False
    if share is None:
        share = NEAR_CAP if pid != os.getpid() else RETIRE_AT
    return address_space(pid) >= share * memory_limit
