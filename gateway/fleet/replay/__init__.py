"""Policy replay: the real router against the simulator's engine model in virtual time, no HTTP.

``duet replay --trace code,conv --replicas h100-70b --policy duet [--compare]`` replays a whole
trace hour through the routing code operators deploy, in seconds, and reports SLO attainment by
task, goodput, cost, variant mix and predictor error.

The fleet is the config's replicas, or one the gateway's desired-replicas gauge and an HPA scale
(``autoscale.run_autoscaled``): replicas join after their start-up, leave after draining, and
the run's ``fleet.FleetTimeline`` says what they cost.

Imports world and workload (the command is ``gateway.fleet.commands.replay``).
"""
