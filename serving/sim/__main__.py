"""``python -m serving.sim``: one simulated vLLM replica."""

from serving.sim.server.cli import main

raise SystemExit(main())
