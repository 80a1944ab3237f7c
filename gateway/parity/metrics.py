"""Online parity's Prometheus series, on the gateway's registry (deploy/prometheus/rules.yml
alerts on ``duet_parity_revoked``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

VARIANT_TASK = ["variant", "task"]


class ParityMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        # result: paired | no_slack (the shadow side had none within slack_wait_s) | busy (max_in_flight
        # reached) | not_scored (the live answer failed, was cut off, or was past the tap's limit) |
        # failed (the shadow side did not answer 200)
        self.checks = Counter("duet_shadow_checks", "Shadow checks by how they ended.", [*VARIANT_TASK, "result"],
                              registry=r)
        self.loss = Counter("duet_parity_pair_loss", "Summed loss (standard - candidate score) of checked pairs.",
                            VARIANT_TASK, registry=r)
        self.evidence = Gauge("duet_parity_loss_evidence",
                              "Evidence that the loss exceeds the tolerance: log-wealth / log(1/alpha) (1: revoke).",
                              VARIANT_TASK, registry=r)
        self.revoked = Gauge("duet_parity_revoked", "1 when online parity revoked the task on the variant.",
                             VARIANT_TASK, registry=r)
        self.opened = Gauge("duet_parity_opened", "1 when online parity opened the task on a shadow variant.",
                            VARIANT_TASK, registry=r)
        self.check_seconds = Histogram("duet_shadow_check_seconds", "Wall time of one shadow check (the shadow run and scoring).",
                                       registry=r, buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120))
