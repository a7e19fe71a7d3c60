"""The helpers checks are written with: the check context, drawn histories, expectations, host
profiles, the registry."""
