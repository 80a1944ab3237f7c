"""Capacity planning: ``duet plan`` sizes each variant's fleet for a target by replaying the
router against the simulator, and ``duet plan-day`` replays a day-shaped trace through the peak's
fixed fleet and the autoscaled one (imports replay, world and workload; the commands are
``gateway.fleet.commands.plan`` and ``plan_day``)."""
