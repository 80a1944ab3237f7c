"""make soak: a long run against the gateway, its memory, descriptors and errors over time."""
