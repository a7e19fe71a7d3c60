"""The pytest suite that runs the case stream: one test item per case.

With ``pytest --engine=...`` and no test paths, the plugin collects this package. To run the
suite from your own test tree (e.g. with a ``conformance_engine_factory`` fixture for an engine
that needs setup), import it into one of your test modules::

    from conformance.suite.test_contract import test_contract  # noqa: F401
    from conformance.suite.test_contract import test_compression_snapshot  # noqa: F401
"""
