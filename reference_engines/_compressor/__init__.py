"""Private helpers of :mod:`reference_engines.compressor` (contract section B).

- :mod:`.constants`: budgets, markers and template text.
- :mod:`.messages`: content text, Phase-1 pruning view, serialisation, orphan repair.
- :mod:`.boundaries`: Phase-2 head and tail cuts.
- :mod:`.summariser`: the summary request, the engine's prompt template, the default
  summariser (deterministic, no model).
"""
