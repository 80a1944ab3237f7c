"""Duet gateway: OpenAI-compatible API, dual-version router, replica state, proxy."""
