"""The processes a run talks to: simulated replicas and a gateway (Duet or LiteLLM) on loopback.
Imports world only."""
