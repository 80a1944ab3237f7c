"""Validate, then escalate: tool-call answers checked and retried on a larger variant."""
