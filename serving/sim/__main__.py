"""``python -m serving.sim``: one simulated vLLM replica."""

from serving.sim.cli import main

raise SystemExit(main())
