"""Locust scenarios, SLO reports and gateway benchmarks."""
