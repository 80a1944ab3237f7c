import re

import pytest

from gateway.fleet.workload.prefix import PromptBlocks
from gateway.fleet.workload.traces import (
    Trace,
    TraceError,
    TraceRequest,
    TraceWindow,
    clip_lengths,
    load_trace,
    replay_arrivals,
    task_traces,
)


def trace(*offsets):
    return Trace("t", tuple(TraceRequest(o, 100 + i, 10 + i) for i, o in enumerate(offsets)))


def test_shipped_traces_load_with_the_readme_counts():
    assert len(load_trace("code").requests) == 8819
    assert len(load_trace("conv").requests) == 19366
    conv = load_trace("conv")
    assert conv.requests[0].offset_s == 0.0
    assert all(a.offset_s <= b.offset_s for a, b in zip(conv.requests, conv.requests[1:], strict=False))
    assert 5.0 < conv.rate_per_s < 6.0


def test_shipped_mooncake_trace_keeps_each_prompts_blocks_into_the_arrivals():
    mooncake = load_trace("mooncake")
    assert len(mooncake.requests) == 12031  # the README's count
    first_line = next(r for r in mooncake.requests if r.input_tokens == 6758 and r.offset_s == 0.0)
    assert first_line.blocks == PromptBlocks(tuple(range(14)), 512)
    # 36.6% of prompt blocks are reusable with an infinite cache (README): seen before in the trace
    seen, reused, total = set(), 0, 0
    for request in mooncake.requests:
        assert request.blocks is not None and len(request.blocks.ids) == -(-request.input_tokens // 512)
        reused += sum(block in seen for block in request.blocks.ids)
        total += len(request.blocks.ids)
        seen.update(request.blocks.ids)
    assert round(100 * reused / total, 1) == 36.6
    arrivals = replay_arrivals({"chat": mooncake}, TraceWindow(60.0), max_context=32768)
    assert arrivals and all(a.blocks is not None for a in arrivals)
    assert task_traces(["mooncake"]).keys() == {"chat"}


def test_task_traces_map_code_to_coding_and_conv_to_chat():
    assert set(task_traces(["code", "conv"])) == {"coding", "chat"}


@pytest.mark.parametrize(
    ("time_scale", "rate_scale", "expected_at"),
    [
        (1.0, 1.0, [0.0, 1.0, 2.0, 3.0]),
        (2.0, 1.0, [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]),  # compressed: twice the arrivals per wall second
        (1.0, 2.0, [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]),
        (1.0, 0.5, [0.0, 2.0]),
    ],
)
def test_replay_scales_arrival_times(time_scale, rate_scale, expected_at):
    arrivals = replay_arrivals({"chat": trace(*range(10))}, TraceWindow(4, time_scale, rate_scale))
    assert [a.at_s for a in arrivals] == expected_at
    assert {a.task for a in arrivals} == {"chat"}


def test_replay_starts_inside_the_trace_and_wraps_around_its_end():
    arrivals = replay_arrivals({"chat": trace(0, 1, 2)}, TraceWindow(4, start_s=2))
    # period = 2 s of trace + one mean gap (3 requests in 2 s -> 2/3 s): request 2 at 0, then the trace again
    assert [a.at_s for a in arrivals] == pytest.approx([0.0, 2 / 3, 5 / 3, 8 / 3, 10 / 3])
    assert [a.input_tokens for a in arrivals] == [102, 100, 101, 102, 100]


def test_replay_merges_tasks_in_time_order():
    arrivals = replay_arrivals({"coding": trace(0.5, 2.5), "chat": trace(0, 1, 2)}, TraceWindow(2.6))
    assert [(a.at_s, a.task) for a in arrivals] == [(0, "chat"), (0.5, "coding"), (1, "chat"), (2, "chat"), (2.5, "coding")]


@pytest.mark.parametrize(
    ("lengths", "window", "expected"),
    [((100, 50), 4096, (100, 50)), ((9000, 50), 4096, (3982, 50)), ((100, 5000), 4096, (100, 2048)), ((0, 0), 4096, (1, 1))],
)
def test_clip_lengths_fits_the_window(lengths, window, expected):
    assert clip_lengths(*lengths, window) == expected


def test_trace_files_load_from_csv_and_jsonl(tmp_path):
    csv_file = tmp_path / "azure.csv"
    csv_file.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                        "2023-11-16 18:17:05.0000000,20,3\n2023-11-16 18:17:04.5000000,10,2\n")
    jsonl_file = tmp_path / "mooncake.jsonl"
    jsonl_file.write_text('{"timestamp": 0, "input_length": 7, "output_length": 5, "hash_ids": [0]}\n\n'
                          '{"timestamp": 1500, "input_length": 9, "output_length": 0}\n')
    assert load_trace(str(csv_file)).requests == (TraceRequest(0.0, 10, 2), TraceRequest(0.5, 20, 3))
    assert load_trace(str(jsonl_file)).requests == (TraceRequest(0.0, 7, 5, PromptBlocks((0,), 512)),
                                                    TraceRequest(1.5, 9, 1))
    traces = task_traces(["code", str(jsonl_file), f"extraction={csv_file}"])
    assert {task: t.name for task, t in traces.items()} == {"coding": "code", "chat": "mooncake", "extraction": "azure"}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("t.txt", "", "nor a .csv or .jsonl file"),
        ("missing.csv", None, "no such file"),
        ("t.csv", "time,in,out\n1,2,3\n", "missing CSV column(s) ContextTokens, GeneratedTokens, TIMESTAMP"),
        ("t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:05.0,x,3\n", "line 2"),
        ("t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n", "no requests"),
        ("t.jsonl", '{"timestamp": 0, "input_length": 7}\n', "line 1: missing field 'output_length'"),
        ("t.jsonl", '{"timestamp": 0, "input_length": 7, "output_length": 1}\nnot json\n', "line 2"),
    ],
)
def test_unreadable_traces_say_which_file_and_why(tmp_path, name, text, message):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(TraceError, match=re.escape(message)) as caught:
        load_trace(str(path))
    assert str(path) in str(caught.value)


def test_two_traces_for_one_task_are_refused():
    with pytest.raises(TraceError, match="task 'chat' already has a trace"):
        task_traces(["conv", "chat=code"])


def test_code_answers_do_not_follow_their_prompts_length():
    """docs/routing.md (why the median): in the Azure code trace the prompt's length says nothing
    about the answer's, so it cannot single out the short answers a TPOT budget is at risk for."""
    import statistics

    requests = sorted(load_trace("code").requests, key=lambda r: r.input_tokens)
    quarter = len(requests) // 4
    medians = [statistics.median(r.output_tokens for r in requests[i * quarter:(i + 1) * quarter]) for i in range(4)]
    assert max(medians) - min(medians) <= 2, medians
    ranks_in = {id(r): i for i, r in enumerate(requests)}
    by_output = sorted(requests, key=lambda r: r.output_tokens)
    pairs = [(ranks_in[id(r)], j) for j, r in enumerate(by_output)]
    assert abs(statistics.correlation(*zip(*pairs, strict=True))) < 0.1


def test_a_share_thins_a_trace_evenly_through_its_hour():
    full = load_trace("mooncake")
    thin = task_traces(["long-context=mooncake*0.1"])["long-context"]
    assert thin.name == "mooncake*0.1"
    assert len(thin.requests) == pytest.approx(0.1 * len(full.requests), rel=0.02)
    for quarter in range(4):  # every stretch keeps about its share, so bursts stay bursts
        start, end = quarter * full.duration_s / 4, (quarter + 1) * full.duration_s / 4
        inside = sum(start <= r.offset_s < end for r in full.requests)
        kept = sum(start <= r.offset_s < end for r in thin.requests)
        assert kept == pytest.approx(0.1 * inside, rel=0.1)
    assert task_traces(["long-context=mooncake*0.1"])["long-context"] == thin  # deterministic


@pytest.mark.parametrize("share", ["0", "1.5", "a tenth", ""])
def test_a_share_outside_0_1_is_refused_with_the_spec(share):
    with pytest.raises(TraceError, match=re.escape(f"trace 'mooncake*{share}'")):
        task_traces([f"mooncake*{share}"])
