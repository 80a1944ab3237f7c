"""Autoscaling: how many replicas of each variant the traffic needs now (the gauge
``duet_desired_replicas{model, variant}`` an HPA or a KEDA ScaledObject scales each variant's
Deployment on), and how a variant of several engine groups splits that count over their
Deployments (``group_split.py``). Pure and synchronous, like routing: it imports only the
vocabulary (``gateway.domain``) and itself, so the replay's autoscaled fleet runs the same
arithmetic."""

from gateway.scaling.capacity_curve import CapacityCurve
from gateway.scaling.demand import DemandMeter, Tally, TaskDemand, peak
from gateway.scaling.desired import TaskSizing, VariantNeed, desired_replicas
from gateway.scaling.group_split import GroupShare, split_replicas, with_groups
from gateway.scaling.policy import Autoscaling
from gateway.scaling.schedule import FloorSchedule, ScheduleStep
from gateway.scaling.schedule import from_counts as schedule_from_counts

__all__ = ["Autoscaling", "CapacityCurve", "DemandMeter", "FloorSchedule", "GroupShare", "ScheduleStep",
           "Tally", "TaskDemand", "TaskSizing", "VariantNeed", "desired_replicas", "peak",
           "schedule_from_counts", "split_replicas", "with_groups"]
