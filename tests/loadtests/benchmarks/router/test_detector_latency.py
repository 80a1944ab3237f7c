"""The detectors' latency benchmark: both detectors take turns on every request, long documents are
as long as asked and differ, and the section shows every stream with the ratio it was computed from."""

from __future__ import annotations

import json
from pathlib import Path

from loadtests.benchmarks.router.detector_latency import RESULTS, long_documents, render, summary, timed


def test_every_request_goes_through_each_detector_once_the_first_alternating() -> None:
    order: list[str] = []
    detectors = {"words": lambda m: order.append("words"), "blend": lambda m: order.append("blend")}
    times = timed(detectors, [[{"role": "user", "content": str(k)}] for k in range(4)])
    assert order == ["words", "blend", "blend", "words", "words", "blend", "blend", "words"]
    assert all(len(t["wall"]) == len(t["cpu"]) == 4 for t in times.values())


def test_the_ratio_is_blend_over_words_per_quantile() -> None:
    times = {"words": {"wall": [1000] * 100, "cpu": [1000] * 100}, "blend": {"wall": [3000] * 99 + [9000], "cpu": [1] * 100}}
    rows = summary(times, prompts=100)
    assert rows["blend_over_words"]["p50_us"] == 3.0
    assert rows["blend"]["wall"]["max_us"] == 9.0 and rows["prompts"] == 100


def test_long_documents_are_about_the_size_asked_and_each_different() -> None:
    stream = [[{"role": "user", "content": f"prompt number {k} " * 10}] for k in range(50)]
    documents = long_documents(stream, count=5, tokens=1000)
    texts = [d[0]["content"] for d in documents]
    assert all(4000 <= len(t) < 4000 + 200 for t in texts)
    assert len(set(texts)) == 5


def test_the_section_shows_each_stream_of_the_committed_results() -> None:
    results = json.loads(Path(RESULTS).read_text())
    text = render(results)
    for tokens in results["synthetic"]:
        assert f"synthetic {tokens} tokens" in text
    cold = results["real_cold"]
    assert f"| {cold['blend']['wall']['p99_us']:.0f} |" in text
    assert f"{cold['blend_over_words']['p99_us']:.2f}" in text
    assert results["hardware_class"] in text


def test_where_the_compiled_core_served_numpys_columns_follow() -> None:
    results = json.loads(Path(RESULTS).read_text())
    with_numpy = {**results, "real_cold": {**results["real_cold"], "blend-numpy": {
        "wall": {"p50_us": 369.4, "p99_us": 1403.2, "max_us": 2000.0}, "cpu": {"p50_us": 1.0, "p99_us": 1.0, "max_us": 1.0}}}}
    for stream in ("real_cold_first_500", "real_32k_cold"):
        with_numpy[stream] = {**results[stream], "blend-numpy": with_numpy["real_cold"]["blend-numpy"]}
    with_numpy["synthetic"] = {k: {**r, "blend-numpy": with_numpy["real_cold"]["blend-numpy"]}
                               for k, r in results["synthetic"].items()}
    text = render(with_numpy)
    assert "| blend, numpy p50 µs | blend, numpy p99 µs |" in text and " 369 | 1403 |" in text
    plain = {**results, "real_cold": {k: v for k, v in results["real_cold"].items() if k != "blend-numpy"}}
    assert "numpy p50" not in render(plain)
