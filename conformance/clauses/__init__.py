"""The contract's clause catalogue and the failure types that name a clause (the bottom layer)."""
