"""Scoring a load test's requests: budgets met, reports and plots (the traces they replay are the
fleet's, gateway.fleet.workload). Imports gateway.flow only; no harness, no locust."""
