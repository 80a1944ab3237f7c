"""The benchmark's pure parts: the docs section it writes and the engine replay it times."""

from __future__ import annotations

from pathlib import Path

from loadtests.benchmarks.sim.bench import (
    DOCS,
    END,
    START,
    ReplaySpeed,
    StreamLoad,
    render,
    replace_curves,
    replay_speed,
    write_docs,
)
from serving.sim.fidelity import Point


def section(source: str = "SOURCE-A") -> str:
    streams = [StreamLoad(100, 990.0, 1000.0, 0.3), StreamLoad(4000, 500.0, 1000.0, 0.99)]
    return render(streams, (800.0, 0.5), ReplaySpeed(3000, 250.0, 1.0), [("p", "chat", [(1, 1.5)])], source,
                  [Point("bf16", "decode tok/s, 1 stream", 30.0, 27.0), Point("bf16", "x", 1.0, 2.0)])


def test_render_states_sustained_and_fidelity() -> None:
    text = section()
    assert "duet replay" not in text
    with_trace = render([], (1.0, 0.1), ReplaySpeed(1, 1.0, 1.0), [], "S", [], trace=ReplaySpeed(4000, 600.0, 2.0))
    assert "**2.00 CPU s**, 300x faster than real time (an hour of trace: ~12 CPU s)" in with_trace
    assert text.startswith("## Simulator") and "make bench-sim" in text
    assert "| 100 | 1000 | 990 | 30% | yes |" in text and "| 4000 | 1000 | 500 | 99% | no |" in text
    assert "| bf16 | decode tok/s, 1 stream | 30.000 | 27.000 | 0.90 |" in text
    assert "1 of 2 points within 25%" in text


def test_docs_section_is_replaced_and_others_kept(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    write_docs(section(), docs)
    assert docs.read_text().startswith("# Benchmarks\n\n<!-- bench-sim:start")
    docs.write_text(docs.read_text() + "\n<!-- other:start -->\n## Gateway overhead\n\nkept\n<!-- other:end -->\n")
    write_docs(section("SOURCE-B"), docs)
    text = docs.read_text()
    assert text.count("## Simulator") == 1 and "SOURCE-B" in text and "SOURCE-A" not in text
    assert text.endswith("<!-- bench-sim:end -->\n\n<!-- other:start -->\n## Gateway overhead\n\nkept\n<!-- other:end -->\n")


def test_the_speed_up_table_is_replaced_alone(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    write_docs(section(), docs)
    text = replace_curves(docs.read_text(), [("q", "coding", [(8, 1.25)])])
    assert "| q | coding | 8: 1.25x |" in text and "| p | chat |" not in text
    assert text.replace("| q | coding | 8: 1.25x |", "| p | chat | 1: 1.50x |") == docs.read_text()


def test_replay_workload_finishes_every_request() -> None:
    speed = replay_speed(requests=2000)  # how fast is printed by make bench-sim, not asserted
    assert speed.finished == 2000 and speed.virtual_s > 0 and speed.cpu_s > 0


def test_the_committed_docs_have_the_section_to_replace() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1  # else a rerun would append a second one
