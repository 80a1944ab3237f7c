"""The prompt-cache section of docs/benchmarks.md is the committed results rendered."""

from loadtests.benchmarks.prompt_cache.render import DOCS, END, START, current, goals, load_replays, section, write


def test_the_docs_section_is_the_committed_results_rendered():
    replays = load_replays()
    assert len(replays) >= 2 and len({r["rate_scale"] for _, r in replays}) == len(replays)  # two load levels
    for _, result in replays:
        assert result["seeds"]["count"] >= 5 and result["prior_error"] and result["output_length"].startswith("learned")
    assert section(DOCS.read_text()) == current()


def summary(p90, good, cost):
    return {"ttft_ms": {"p90": p90}, "good_fraction": good, "cost_usd": cost}


def test_each_goal_is_met_or_not_on_its_own_numbers():
    met = goals({"duet": summary(900, 0.9, 5.9), "llm-d-default": summary(1000, 0.8, 6.0),
                 "always-standard": summary(5000, 0.5, 10.0)})
    assert [line.count("**met**") for line in met] == [1, 1, 1]
    missed = goals({"duet": summary(1100, 0.7, 6.1), "llm-d-default": summary(1000, 0.8, 6.0),
                    "always-standard": summary(5000, 0.5, 10.0)})
    assert [line.count("**not met**") for line in missed] == [1, 1, 1] and "0.610x" in missed[2]


def test_write_replaces_the_section_and_keeps_the_rest(tmp_path):
    docs = tmp_path / "benchmarks.md"
    docs.write_text(f"# Benchmarks\n\nbefore\n\n{START}\nstale\n{END}\n\nafter\n")
    write(docs)
    text = docs.read_text()
    assert text.startswith("# Benchmarks\n\nbefore\n\n") and text.endswith(f"{END}\n\nafter\n") and "stale" not in text
