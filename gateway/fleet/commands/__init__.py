"""The fleet's ``duet`` subcommands, each module exposing ``register(subparsers)``: ``replay.py``
(``duet replay``, handing ``--sweep`` to ``sweep.py``), ``plan.py`` (``duet plan``) and
``plan_day.py`` (``duet plan-day``): arguments, printing and results files. May import every room
of the fleet."""
