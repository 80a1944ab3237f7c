"""Gateway overhead benchmark (``make bench-overhead``): Duet against a direct connection,
LiteLLM's proxy and vllm-router, in front of the same fast nginx backend, gateways pinned to
one core. Entry point: ``python -m loadtests.benchmarks.overhead``; beside it, two per-request
measures for comparing a change on a shared machine: ``cpu_cost`` (CPU time) and
``instructions`` (callgrind).

Rooms: ``stack/`` (what a run starts), ``measure/`` (how a run measures), ``report/`` (what it
prints and records); each imports only the rooms before it in that list."""
