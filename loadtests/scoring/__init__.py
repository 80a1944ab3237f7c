"""Traces and scoring: arrivals read from the traces, budgets met, reports and plots. Imports world only;
no harness, no locust."""
