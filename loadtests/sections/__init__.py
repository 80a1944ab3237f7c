"""One mechanism for generated docs: a Section renders the text between its markers from committed
results; registry.py lists them all, summary.py heads docs/benchmarks.md. section.py imports nothing."""
