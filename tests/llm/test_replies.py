"""Covers simulator.llm.replies: the engine LLM's summariser (B4 template), compaction prompts
split into their parts."""

from __future__ import annotations

from simulator.llm.replies import EngineSummaryReplies, split_compaction_prompt
from simulator.provider.replies import SUMMARY_SECTIONS

TURNS = "[USER]: Please fix src/app.py. We decided to use regex.\n\n[ASSISTANT]: Done."
FIRST = (
    "You are a summarization agent creating a context checkpoint.\n\nTURNS TO SUMMARIZE:\n"
    f"{TURNS}\n\nUse this exact structure:\n\n## Goal\n[What the user wants]"
    '\n\nFOCUS TOPIC: "regex"\nThis compaction should PRIORITISE ...'
)
ITERATIVE = (
    "Preamble.\n\nPREVIOUS SUMMARY:\n## Goal\n- Ship v1.\n\nNEW TURNS TO INCORPORATE:\n"
    f"{TURNS}\n\nMEMORY PROVIDER CONTEXT:\nblock\n\nUpdate the summary using this exact structure."
)


def test_split_first_compaction_prompt():
    assert split_compaction_prompt(FIRST) == (TURNS, None, "regex")


def test_split_iterative_prompt():
    assert split_compaction_prompt(ITERATIVE) == (TURNS, "## Goal\n- Ship v1.", None)


def test_other_prompts_are_summarised_whole():
    assert split_compaction_prompt("Summarise: a. b.") == ("Summarise: a. b.", None, None)


def test_reply_is_the_b4_summary_of_the_turns_only():
    """B4 sections; the instructions are not summarised; A5 focus under Critical Context."""
    request = {"messages": [{"role": "user", "content": FIRST}]}
    text = EngineSummaryReplies().reply(request, 0, 0).content
    assert [s for s in SUMMARY_SECTIONS if f"## {s}" not in text] == []
    assert "summarization agent" not in text and "src/app.py" in text
    critical = text[text.index("## Critical Context") :]
    assert "regex" in critical
    assert EngineSummaryReplies().reply(request, 5, 9).content == text  # same request, same text


def test_previous_summary_is_carried():
    """B6: the previous summary's points are carried into Progress."""
    request = {"messages": [{"role": "user", "content": ITERATIVE}]}
    assert "- Earlier: Ship v1." in EngineSummaryReplies().reply(request, 0, 0).content
