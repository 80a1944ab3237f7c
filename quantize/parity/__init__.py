"""The capability-parity gate: run the suite on a standard and a candidate endpoint, compare
per task type with a paired bootstrap, and record which task types the candidate may serve."""
