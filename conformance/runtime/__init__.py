"""Where engine code runs: child processes and their supervisor, the sandbox, limits and
timeouts."""
