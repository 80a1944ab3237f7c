"""Live replica state: vLLM /metrics parsing, health and scrape monitoring, the gateway's own
observations per replica, circuit breakers, and the store that routing snapshots read."""
