"""Session stores behind one small interface (:class:`simulator.store.base.SessionStore`)."""
