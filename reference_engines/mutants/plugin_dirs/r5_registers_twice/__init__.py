"""Breaks R5: register(ctx) registers two engines (the host refuses the second)."""

from reference_engines.mutants._base import MinimalEngine


class _Engine(MinimalEngine):
    @property
    def name(self):
        return "r5_registers_twice"


def register(ctx):
    ctx.register_context_engine(_Engine())
    ctx.register_context_engine(_Engine())  # the defect
