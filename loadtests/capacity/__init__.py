"""duet plan: the cheapest replica count per variant that meets a good-share target, by replaying
the router against the simulator (replay, world, scoring, sections.section; never the registry)."""
