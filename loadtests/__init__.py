"""Locust scenarios, SLO reports, gateway benchmarks and the generated doc sections; the fleet's
commands (replay, sweeps, plans) are product code in gateway/fleet/."""
