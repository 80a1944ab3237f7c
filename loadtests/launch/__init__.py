"""The processes a run talks to: simulated replicas and a gateway (Duet or LiteLLM) on loopback.
Imports the fleet's world (gateway.fleet.world) only."""
