"""One conformance run: the session, case execution, settling results and the verdict."""
