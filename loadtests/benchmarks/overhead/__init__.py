"""Gateway overhead benchmark (``make bench-overhead``): Duet against a direct connection,
LiteLLM's proxy and vllm-router, in front of the same fast nginx backend, gateways pinned to
one core. Entry point: ``python -m loadtests.benchmarks.overhead``."""
