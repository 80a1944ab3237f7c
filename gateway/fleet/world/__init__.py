"""What a replay or a benchmark runs against: replica sets and prices, policy configs (``policies/``),
the priors' error. Imports gateway.flow and serving only."""
