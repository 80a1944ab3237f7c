"""What a benchmark runs against: replica sets and prices, policy configs, the priors' error.
Imports gateway.flow and serving only."""
