"""The processes a run talks to: simulated replicas and a gateway (Duet or LiteLLM) on loopback,
and Envoy's config in front of Duet's endpoint picker (envoy.py).
Imports the fleet's world (gateway.fleet.world) only."""
