"""Run ``SummaryEngine`` (``summary_engine.py``) under the kit's per-case engine LLM on a real
hermes-agent 0.19.0, for tests/llm/test_summary_parity.py.

Run with the Python of a venv holding hermes-agent 0.19.0 and this repository on
``PYTHONPATH``::

    python kit_llm_driver.py CASES_JSON OUT_JSON

Each case ``{"id", "case_id", "messages"}`` gets a fresh
:func:`conformance.authoring.engine_llm.engine_llm` (``case_id`` seeds it: a fresh LLM served on
loopback) and a fresh ``$HERMES_HOME`` written by its ``seed_home``, so the engine's
``call_llm`` goes through Hermes' real auxiliary client; the output records what the engine
got (``last_outcome``), the messages it returned, the case's ledger and which client served
it. Network: only loopback (the guard of ``tests/host/hermes_fixture/drive_hermes.py``).
"""

import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "host" / "hermes_fixture"))

from drive_hermes import _guard_network  # noqa: E402


def main():
    cases_path, out_path = sys.argv[1:3]
    _guard_network()
    from conformance.authoring.engine_llm import engine_llm, hermes_client_present

    sys.path.insert(0, str(HERE))
    from summary_engine import SummaryEngine

    out = []
    for case in json.loads(Path(cases_path).read_text()):
        home = Path(tempfile.mkdtemp(prefix="kit-llm-")) / "hermes-home"
        home.mkdir()
        os.environ["HERMES_HOME"] = str(home)
        with engine_llm(case["case_id"]) as (ledger, seed_home):
            seed_home(home)
            engine = SummaryEngine()
            messages = engine.compress(case["messages"])
        out.append(
            {
                "id": case["id"],
                "client": "hermes-agent" if hermes_client_present() else "shim",
                "outcome": engine.last_outcome,
                "messages": messages,
                "ledger": ledger.as_dict(),
            }
        )
    Path(out_path).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
