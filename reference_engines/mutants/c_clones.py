"""Mutants of section C (C1, C2). Each breaks one clause."""

from __future__ import annotations

import copy
import sqlite3

from reference_engines.mutants._base import MinimalEngine

_COUNTERS = (
    "last_prompt_tokens",
    "last_completion_tokens",
    "last_total_tokens",
    "compression_count",
)


class _SharedCounter:
    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        return self if obj is None else obj.counters.get(self.name, 0)

    def __set__(self, obj, value):
        obj.counters[self.name] = value


class SharedCounters(MinimalEngine):
    """Breaks C1: clones share one counters dict with the registered instance."""

    mutant_of = "C1"
    last_prompt_tokens = _SharedCounter()
    last_completion_tokens = _SharedCounter()
    last_total_tokens = _SharedCounter()
    compression_count = _SharedCounter()

    def __init__(self):
        self.counters = {}

    def clone_for_agent(self):
        return copy.copy(self)  # the defect: the counters dict is shared


class _SharedBudget:
    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        return self if obj is None else obj.budget.get(self.name, 0)

    def __set__(self, obj, value):
        obj.budget[self.name] = value


class SharedBudget(MinimalEngine):
    """Breaks C2: clones share the budget (context_length, threshold_tokens) with the parent."""

    mutant_of = "C2"
    context_length = _SharedBudget()
    threshold_tokens = _SharedBudget()

    def __init__(self):
        self.budget = {}

    def clone_for_agent(self):
        clone = copy.copy(self)  # the defect: the budget dict is shared
        clone.__dict__ = {
            k: (copy.deepcopy(v) if k != "budget" else v) for k, v in self.__dict__.items()
        }
        return clone


class UnpicklableDefaultClone(MinimalEngine):
    """Breaks C1 (REG-f): holds a sqlite3 connection but keeps the deepcopy clone_for_agent."""

    mutant_of = "C1"

    def __init__(self):
        self.db = sqlite3.connect(":memory:", check_same_thread=False)  # the defect: no clone hook


class DeepcopyRaises(MinimalEngine):
    """Breaks C1 on hermes-agent 0.19.0 (``--host-profile=hermes-0.19``): its clone_for_agent
    works, but that host never calls it; it deep-copies the registered engine, and this one's
    ``__deepcopy__`` raises, so every agent silently gets the built-in compressor instead."""

    mutant_of = "C1"

    def clone_for_agent(self):
        return type(self)()

    def __deepcopy__(self, memo):
        raise TypeError("cannot pickle '_thread.RLock' object")  # the defect: no working deepcopy
