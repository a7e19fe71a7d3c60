"""Cases on a watched thread of this process (:func:`supervise_inprocess`): in a supervised
child, and where ``os.fork`` does not exist. Hangs are reported; a dying engine ends the run."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from conformance.runtime.child_reports import supervised
from conformance.runtime.outcomes import Hung

#: The PRNG the case threads of this process share as Hypothesis' per-thread global one
#: (``{pid: Random}``; see :func:`_share_hypothesis_prng`).
_SHARED_PRNG: dict[int, random.Random] = {}


def _share_hypothesis_prng() -> None:
    """Give this (new) case thread the process's one registered PRNG as Hypothesis' per-thread
    global ``Random``, registering it once per process.

    Left alone, Hypothesis makes that ``Random`` the first time a thread runs a test and passes
    it to ``register_random``, which runs a full ``gc.collect()`` and ``gc.get_referrers()``:
    tens of milliseconds with the kit loaded, paid by every case, since each case runs on a new
    thread. The draws do not change: Hypothesis seeds every registered PRNG (this one too) at
    the start of each example and restores it after, and it reads the PRNG's own bits only for
    a test that is neither derandomized nor given a seed, which the kit's checks never are (a
    ``--conformance-random`` run draws its seed first). Keyed by process id so that a forked
    child makes its own. If Hypothesis' internals differ from the ones this expects, nothing is
    done and Hypothesis makes its own, as before; that is the case on the Hypothesis releases
    that keep one process-wide ``Random`` (no ``hypothesis.core.threadlocal``), registered once
    by Hypothesis itself, so no thread pays for it and there is nothing to share.
    """
    try:
        import hypothesis.core as hypothesis_core
        from hypothesis import register_random

        local = hypothesis_core.threadlocal
        if local._hypothesis_global_random is not None:
            return
        prng = _SHARED_PRNG.get(os.getpid())
        if prng is None:
            _SHARED_PRNG.clear()  # a parent's entry, inherited over fork
            prng = _SHARED_PRNG[os.getpid()] = random.Random()  # held here before registering
            register_random(prng)
        local._hypothesis_global_random = prng
    except (AttributeError, ImportError):  # one process-wide PRNG, or another Hypothesis
        return


def supervise_inprocess(fn: Callable[[], Any], *, call_limit: float, case_limit: float) -> Any:
    """``fn()`` on a daemon thread here, watched for hung calls: the value, or :class:`Hung`
    when one engine call (any thread that started during ``fn``) stayed in flight longer than
    ``call_limit`` seconds, or ``fn`` outlasted ``case_limit``. A hung call's thread is
    abandoned (Python cannot kill a thread). Used in a case's child (where it names the hang
    with the case's context) and without fork.

    Raises:
        BaseException: whatever ``fn`` raised.
    """
    from conformance.runtime.timeouts import CALL_STARTED, CURRENT_CALL

    box: dict[str, Any] = {}

    def run() -> None:
        _share_hypothesis_prng()
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    before = {k: CALL_STARTED.get(k) for k in CURRENT_CALL}  # calls hung in earlier cases
    # In a supervised child the case thread is not a daemon, like the host's main thread, so
    # threads the engine starts inherit what they would in Hermes (a hang kills the child
    # anyway); in this process it must be one, so that a hung call can be abandoned.
    worker = threading.Thread(target=run, name="conformance-case", daemon=not supervised())
    started = time.monotonic()
    worker.start()
    while worker.is_alive():
        worker.join(0.05)
        now = time.monotonic()
        for ident, since in list(CALL_STARTED.items()):
            if before.get(ident) == since or since is None:
                continue
            if now - since > call_limit:
                entry = CURRENT_CALL.get(ident)
                return Hung(entry[2] if entry else "", now - since, ident)
        if now - started > case_limit:
            hung = Hung("", now - started, worker.ident or 0)
            hung.case_limit = True
            return hung
    if "error" in box:
        raise box["error"]
    return box.get("value")
