"""Mutant engines: each breaks exactly one clause, proving that its checks can fail.

Every mutant class has ``mutant_of`` (the clause it breaks). ``MUTANTS`` maps
``module:Class`` specs to that clause; the kill-matrix test runs them all.
"""

MUTANTS = {
    "reference_engines.mutants.a1_name_method:NameIsMethod": "A1",
    "reference_engines.mutants.a6_never_counts:NeverCounts": "A6",
    "reference_engines.mutants.v2_orphan_result:OrphanToolResult": "V2",
    "reference_engines.mutants.v4_drops_system:DropsSystemPrompt": "V4",
}
