"""Plugin folders for the R4-R6 checks: ``minimal`` is correct; the others each break one clause.

They are folders as a user would put them under ``$HERMES_HOME/plugins/<name>/`` (loaded by
path, never imported as part of this package).
"""
