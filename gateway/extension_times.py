"""``duet_extension_point_duration_seconds{extension_point, plugin}``: how long each extension
point took, as llm-d's director records it. Extension points: the lifecycle's hooks (``dispatched``,
``first_token``, ``attempt_ended``, ``done``, ``refused``; plugin = the subscriber, e.g.
``decode-keeper``) and the router's plugins (``filter``, ``predictor``, ``scorer``, ``objective``;
plugin = the instance's name in the policy). An async subscriber's time includes its awaits.

Cheap on the hot path: an observation finds its slot in one dict, its bucket with a shift, and
adds one to a preallocated list and its time to a total. No
prometheus_client object is touched per request: ``ExtensionTimesCollector`` turns the totals
into a histogram when /metrics is scraped.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable

from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

METRIC = "duet_extension_point_duration_seconds"
# Powers of two from 1.024 µs (a filter over a few replicas) to 1.07 s (a subscriber waiting on
# Redis): a call of n ns goes to bucket ((n - 1) >> 10).bit_length(), one shift and one C call
# where a bisection of the bounds cost twice as much (n is at least 1: a clock read takes longer).
_SHIFT, _FINITE = 10, 21
BUCKETS_S = tuple((1 << (_SHIFT + k)) / 1e9 for k in range(_FINITE))
_LE = (*(repr(b) for b in BUCKETS_S), "+Inf")  # as prometheus_client writes them (1.024e-06, ...)
_SLOTS = 65  # every index a 64-bit duration can reach; those past the last bound count in +Inf only


class _Slot:
    """One series: calls per bucket (the last one past every bound) and their total time."""

    __slots__ = ("extension_point", "plugin", "counts", "sum_ns")

    def __init__(self, extension_point: str, plugin: str) -> None:
        self.extension_point = extension_point
        self.plugin = plugin
        self.counts = [0] * _SLOTS
        self.sum_ns = 0


class ExtensionTimes:
    """The timer the running gateway gives the director and, through it, the router
    (``gateway.routing.timing.ExtensionTimer``)."""

    def __init__(self) -> None:
        # By plugin alone (one lookup per call): a subscriber or a plugin name belongs to one
        # extension point. One met at a second point gets a second slot, kept by both.
        self._last: dict[Hashable, _Slot] = {}
        self._slots: dict[tuple[str, Hashable], _Slot] = {}

    def observe(self, extension_point: str, plugin: Hashable, elapsed_ns: int) -> None:
        slot = self._last.get(plugin)
        if slot is None or slot.extension_point != extension_point:
            slot = self._slot(extension_point, plugin)
        slot.counts[((elapsed_ns - 1) >> _SHIFT).bit_length()] += 1
        slot.sum_ns += elapsed_ns

    def slots(self) -> list[_Slot]:
        return list({id(slot): slot for slot in list(self._slots.values())}.values())

    def _slot(self, extension_point: str, plugin: Hashable) -> _Slot:
        slot = self._slots.get((extension_point, plugin))
        if slot is None:
            name = plugin if isinstance(plugin, str) else subscriber_name(plugin)
            # Two subscribers of one class (two bound methods) share the series their name labels.
            slot = next((s for s in self._slots.values() if (s.extension_point, s.plugin) == (extension_point, name)),
                        None) or _Slot(extension_point, name)
            self._slots[extension_point, plugin] = slot
        self._last[plugin] = slot
        return slot


def subscriber_name(subscriber: object) -> str:
    """A hook subscriber's label: its class's name in kebab case for a bound method
    (``DecodeKeeper.dispatched`` -> ``decode-keeper``), else its function's name."""
    owner = getattr(subscriber, "__self__", None)
    name = type(owner).__name__ if owner is not None else getattr(subscriber, "__name__", type(subscriber).__name__)
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).replace("_", "-").lower()


class ExtensionTimesCollector(Collector):
    """The histogram of ``times`` at scrape time (cumulative buckets, seconds)."""

    def __init__(self, times: ExtensionTimes) -> None:
        self._times = times

    def collect(self) -> Iterable[Metric]:
        family = HistogramMetricFamily(
            METRIC, "Time spent in each extension point: the lifecycle's hook subscribers and the router's plugins.",
            labels=["extension_point", "plugin"])
        for slot in self._times.slots():
            counts = list(slot.counts)  # a copy: a request may land while this scrape reads
            cumulative, buckets = 0, []
            for bound, count in zip(_LE[:_FINITE], counts[:_FINITE], strict=True):
                cumulative += count
                buckets.append((bound, float(cumulative)))
            buckets.append(("+Inf", float(sum(counts))))
            family.add_metric([slot.extension_point, slot.plugin], buckets, slot.sum_ns / 1e9)
        return [family]
