"""Writer process for the SIGKILL crash test (``test_crash.py``); not a test itself.

Usage: ``python -m tests.store.crash_writer DB_PATH SEED``. Opens the store (recovering
from any earlier crash), then loops forever: builds a batch of messages with pre-stamped
uids, prints ``B <uid> <uid> ...`` (batch begins), flushes it with ``append``, and prints
``C`` once the commit has returned. The parent kills it with SIGKILL at a moment of its
choosing, usually right after a ``B`` line, i.e. while the transaction is in flight.
"""

from __future__ import annotations

import random
import sys

from simulator.store.sqlite import SQLiteStore

#: Messages per batch and characters per message: big enough that a commit takes a few ms.
BATCH_MIN, BATCH_MAX = 20, 120
TEXT_CHARS = 1500


def main(path: str, seed: int) -> None:
    """Run the writer loop on ``path`` with ``random.Random(seed)`` (never returns)."""
    rng = random.Random(seed)
    store = SQLiteStore(path, uid_factory=lambda: f"{rng.getrandbits(128):032x}")
    sessions = [s.id for s in store.list_sessions()]
    sid = sessions[0] if sessions else store.create_session(session_id="crash")
    out = sys.stdout
    out.write(f"R {store.integrity_check()}\n")
    out.flush()
    n = 0
    while True:
        batch = []
        for _ in range(rng.randint(BATCH_MIN, BATCH_MAX)):
            n += 1
            batch.append(
                {
                    "role": "user" if n % 2 else "assistant",
                    "content": f"{seed}:{n} " + "x" * TEXT_CHARS,
                    "message_uid": f"{rng.getrandbits(128):032x}",
                }
            )
        out.write("B " + " ".join(m["message_uid"] for m in batch) + "\n")
        out.flush()
        store.append(sid, batch)
        out.write("C\n")
        out.flush()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
