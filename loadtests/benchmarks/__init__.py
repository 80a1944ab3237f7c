"""One room per benchmark: its run, its results schema and its renderer together. A benchmark
imports world, scoring, launch, replay, sections.section; never real/ nor the sections registry."""
