"""make bench-slo: traces through the gateway with locust; SLO attainment, goodput and cost per policy."""
