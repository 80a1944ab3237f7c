"""Quantization recipes and the capability-parity gate."""
