"""make bench-router: what a routing decision, the prefix hashing and online parity's draw cost;
plan.py (run alone): what planning one chat request costs whole."""
