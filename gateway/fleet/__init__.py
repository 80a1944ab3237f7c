"""The fleet's commands: what users run to choose a routing policy and size a fleet, all in virtual
time over the gateway's own lifecycle and the simulator's engine (no HTTP, no GPU).

Rooms, each may import only those below it (``tests/test_layers.py`` checks):

    commands   duet replay (--sweep), duet plan, duet plan-day: arguments, printing, results files
    capacity   the cheapest fleet per variant meeting a target; a day replayed, fixed vs autoscaled
    sweep      offered load from light to past the knee; the knee's goodput and its diagnosis
    replay     the router in virtual time on a fixed or autoscaled fleet; a replay's report
    world      replica sets and prices, policy configs, the priors' error
    workload   the shipped traces and how a trace becomes arrivals (imports nothing of the project)

Outside itself, the fleet imports only the gateway's lifecycle names (``gateway.flow``), plugin
names (``gateway.routing.registry``) and ``serving`` (the simulator). In the gateway only
``gateway.cli`` imports it; ``loadtests/`` may (its harnesses replay and score with it).
"""
