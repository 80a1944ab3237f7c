"""Serving: vLLM launch profiles, local replicas, the local model, and the replica simulator."""
