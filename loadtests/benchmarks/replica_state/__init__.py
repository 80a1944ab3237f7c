"""Replica-state hot path benchmark: the store's ``begin`` + ``finish`` and ``snapshot`` per
request and ``parse_vllm_metrics`` per scrape, printed (no results file, no generated section).
Entry point: ``python -m loadtests.benchmarks.replica_state.run``. Imports the gateway through
``gateway.flow`` only."""
