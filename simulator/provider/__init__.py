"""The deterministic provider simulator (OpenAI- and Anthropic-shaped) (clauses P1–P4, U9).

Modules, one responsibility each:

- :mod:`~simulator.provider.tokens`: offline cl100k counts, memoised per block (the token truth).
- :mod:`~simulator.provider.render`: request → blocks (tokens, prefix hashes, breakpoints) and
  validation; :mod:`~simulator.provider.fields`: U9 fields at any depth, keys outside the schema.
- :mod:`~simulator.provider.anthropic_cache` / :mod:`~simulator.provider.openai_cache`: the two
  caching models.
- :mod:`~simulator.provider.models`: model table (windows, cache rules and minimums, prices).
- :mod:`~simulator.provider.clock`: the virtual clock; :mod:`~simulator.provider.faults`: the
  fault schedule; :mod:`~simulator.provider.inputs`: validation of configuration values.
- :mod:`~simulator.provider.replies`: reply modes (echo, scripted, tool scripts, summariser / B4).
- :mod:`~simulator.provider.responses`: response bodies and SSE bytes;
  :mod:`~simulator.provider.convert`: Anthropic → OpenAI view for reply modes;
  :mod:`~simulator.provider.errors`: provider-shaped errors.
- :mod:`~simulator.provider.core`: :class:`Provider` (in process);
  :mod:`~simulator.provider.conversation`: the incremental handle.
- :mod:`~simulator.provider.http`: the loopback server and ``serve`` command, with
  :mod:`~simulator.provider.connections` (timeouts, connection cap),
  :mod:`~simulator.provider.body` (body framing, JSON) and :mod:`~simulator.provider.admin`
  (the ``/_sim/`` routes).

Quick use::

    from simulator.provider.core import Provider
    p = Provider(seed=1)
    r = p.chat_completions({"messages": [{"role": "user", "content": "hi"}]})
    r["usage"]["prompt_tokens_details"]["cached_tokens"]
"""
