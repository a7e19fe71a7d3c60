"""Check modules, one per contract section (a_surface: A, v_messages: V, ...)."""
