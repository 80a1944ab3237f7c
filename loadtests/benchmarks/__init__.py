"""One room per benchmark: its run, its results schema and its renderer together. A benchmark
imports scoring, launch, sections.section and the fleet (gateway.fleet: world, workload, replay);
never real/ nor the sections registry."""
