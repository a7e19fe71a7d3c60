"""Mutant of section K (K1): the host's model_thresholds assignment is dropped."""

from __future__ import annotations

from reference_engines.mutants._base import MinimalEngine


class _IgnoresAssignment:
    def __get__(self, obj, owner=None):
        return {}

    def __set__(self, obj, value):
        pass  # the defect: the host's map is dropped


class DropsModelThresholds(MinimalEngine):
    """Breaks K1: the host's model_thresholds assignment is silently dropped."""

    mutant_of = "K1"
    model_thresholds = _IgnoresAssignment()
