"""The prompt-cache section of docs/benchmarks.md: the committed replays it is rendered from, and its
goals (the committed section is checked with every other by tests/loadtests/sections/test_registry.py)."""

from loadtests.benchmarks.prompt_cache.render import goals, load_replays


def test_the_committed_replays_are_two_load_levels_of_five_seeds_or_more():
    replays = load_replays()
    assert len(replays) >= 2 and len({r["rate_scale"] for _, r in replays}) == len(replays)  # two load levels
    for _, result in replays:
        assert result["seeds"]["count"] >= 5 and result["prior_error"] and result["output_length"].startswith("learned")


def summary(p90, good, cost):
    return {"ttft_ms": {"p90": p90}, "good_fraction": good, "cost_usd": cost}


def test_each_goal_is_met_or_not_on_its_own_numbers():
    met = goals({"duet": summary(900, 0.9, 5.9), "llm-d-default": summary(1000, 0.8, 6.0),
                 "always-standard": summary(5000, 0.5, 10.0)})
    assert [line.count("**met**") for line in met] == [1, 1, 1]
    missed = goals({"duet": summary(1100, 0.7, 6.1), "llm-d-default": summary(1000, 0.8, 6.0),
                    "always-standard": summary(5000, 0.5, 10.0)})
    assert [line.count("**not met**") for line in missed] == [1, 1, 1] and "0.610x" in missed[2]
