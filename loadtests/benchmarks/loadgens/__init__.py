"""Third-party load generators against Duet (issue #20): ``vllm bench serve`` and NVIDIA's
AIPerf drive a gateway in front of simulated replicas, and each report is compared with the
gateway's own numbers for the same run. ``python -m loadtests.benchmarks.loadgens`` (``make bench-loadgens``)."""
