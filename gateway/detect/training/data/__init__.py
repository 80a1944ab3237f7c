"""Real labelled prompts: the pinned registry packages they come from (packages.py) and one
reader per public source (sources.py); DATA.md says whose each is, under which license."""
