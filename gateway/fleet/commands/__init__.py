"""The fleet's ``duet`` subcommands, each in two modules: its arguments (``replay_args.py``,
sweeps' included; ``plan_args.py``; ``plan_day_args.py``: ``register(subparsers)``, importing
nothing heavier than argparse and constants, so ``--help`` answers at once) and what it runs
(``replay.py``, handing ``--sweep`` to ``sweep.py``; ``plan.py``; ``plan_day.py``: ``run(args)``,
printing and results files). May import every room of the fleet."""
