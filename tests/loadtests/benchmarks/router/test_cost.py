"""The routing-cost benchmark's index measurement runs (a small one) and reports every step (its
docs section is checked with every other by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

import yaml

from gateway.fleet.world.policies import duet_config
from gateway.fleet.world.replica_sets import REPLICA_SETS
from gateway.flow import parse_config
from loadtests.benchmarks.router import cost as router_bench


def test_an_index_row_has_every_step_and_the_index_share_below_the_whole():
    replica_set = REPLICA_SETS["h100-70b"]
    urls = {v.name: [f"http://bench.invalid/{v.name}/{i}" for i in range(2)] for v in replica_set.variants}
    (model,) = parse_config(yaml.safe_dump(duet_config(replica_set, urls, "duet", 1.0))).models.values()
    row = router_bench.index_row(model, 128, 50)
    assert 60 <= row["blocks"] <= 68  # ~8k tokens of text (4 bytes a token), in 128-token blocks
    assert row["tokenizer_blocks"] == row["blocks"]  # the bench's tokenizer makes a token of 4 characters too
    for step in ("watch", "hash_text", "hash_tokenizer_ids", "hash_token_ids", "lookup_all_replicas", "learn",
                 "index_per_request", "index_per_request_tokenizer"):
        assert 0 < row[step]["p50_us"] <= row[step]["p99_us"] <= row[step]["max_us"]
