"""Where engine code runs: child processes and their supervisor, the sandbox, limits and
timeouts; and what the run's own process needs around it: stop signals handled as one Ctrl-C
(:mod:`~conformance.runtime.stop_signals`) and output paths tried before the run
(:mod:`~conformance.runtime.writable`)."""
