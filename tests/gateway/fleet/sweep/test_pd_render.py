"""The P/D section: each layout's crossing against co-located Duet's, paired seed by seed."""

from __future__ import annotations

from gateway.fleet.sweep.pd_render import crossings, load, paired_ratio, render


def _crossing(*values: float, kind: str = "exact") -> dict:
    return {"runs": [{"kind": kind, "value": v, "nonmonotone": False} for v in values]}


def test_the_ratio_is_taken_seed_by_seed_with_a_student_t_interval() -> None:
    # Seed by seed 1.0, 1.2, 1.4: mean 1.2, sd 0.2, t(2) 4.303 -> 0.2 * 4.303 / sqrt(3) = 0.50.
    assert paired_ratio(_crossing(1.0, 1.2, 2.8), _crossing(1.0, 1.0, 2.0)) == "1.20x ± 0.50"
    # Not a ratio of means: (1 + 2.8) / (1 + 2) would be 1.27.
    assert paired_ratio(_crossing(1.0, 1.0), _crossing(0.5, 1.0, kind="below")).startswith("–")


def test_every_committed_pd_file_renders_its_command_and_each_policys_crossing() -> None:
    results = load()
    assert results, "docs/results/pd/ holds the committed sweeps"
    text = render(results)
    for _, result in results:
        assert result["command"] in text
        for entry in result["crossings"]:
            assert all(f"| {entry['constraint']} | {policy} |" in crossings(result) for policy in entry["policies"])
