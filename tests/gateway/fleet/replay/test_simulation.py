"""Replay: the real router against the engine model in virtual time."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.fleet.replay.report import summarize
from gateway.fleet.replay.setup import arrivals, parse_cluster, policy_config
from gateway.fleet.replay.simulation import Replay, ReplaySettings
from gateway.fleet.replay.sync import run_now
from gateway.fleet.workload.prefix import PromptBlocks
from gateway.fleet.workload.traces import Arrival
from gateway.fleet.world.detections import UnseenDetections


def replay(policy: str, spec: str = "h100-70b:standard=1,fast=1", rate: float = 0.3, duration: float = 60.0):
    cluster = parse_cluster(spec)
    schedule = arrivals(["code", "conv"], duration, rate, cluster)
    return schedule, Replay(policy_config(cluster, policy), cluster.profiles()).run(schedule)


def test_every_arrival_gets_a_result_and_always_standard_uses_standard_only():
    schedule, results = replay("always-standard")
    assert len(results) == len(schedule) > 0
    assert {r.variant for r in results} == {"standard"}
    assert all(r.status == "ok" and r.ttft_s and r.e2e_s >= r.ttft_s for r in results)


def test_duet_prefers_the_cheaper_variant_and_predicts_latency():
    _, results = replay("duet")
    summary = summarize(results, 60.0)
    assert summary["variant_mix"].get("fast", 0) > 0.5
    assert set(summary["predictor_mape"]) <= {"standard", "fast"}
    assert all(0 <= m["e2e"] < 5 for m in summary["predictor_mape"].values())


def test_same_seed_same_results():
    _, first = replay("least-loaded")
    _, second = replay("least-loaded")
    assert [(r.variant, r.ttft_s) for r in first] == [(r.variant, r.ttft_s) for r in second]


def test_overload_costs_attainment():
    _, light = replay("always-standard", rate=0.05)
    _, heavy = replay("always-standard", rate=1.0)
    assert summarize(heavy, 60.0)["slo_attainment"] < summarize(light, 60.0)["slo_attainment"]


@pytest.mark.parametrize("spec", ["nope", "h100-70b:standard=x", "h100-70b:turbo=1"])
def test_bad_cluster_specs_are_refused(spec):
    with pytest.raises(ValueError):
        parse_cluster(spec)


def test_run_now_refuses_a_coroutine_that_suspends():
    import asyncio

    async def suspends():
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError):
        run_now(suspends())


def test_step_model_error_is_measured_under_every_policy():
    """Least-loaded routes without predicting; Duet's step model still predicts each request on
    the replica that served it, and at this light load it is close (a wrong model would not be)."""
    _, results = replay("least-loaded", rate=0.1)
    summary = summarize(results, 60.0)
    assert summary["predictor_mape"] == {} or all(m.get("e2e") is not None for m in summary["predictor_mape"].values())
    assert set(summary["step_model_mape"]) == {"standard", "fast"}
    assert all(m["e2e"] < 0.15 for m in summary["step_model_mape"].values())
    assert all(r.step_model is not None for r in results if r.status == "ok")


def test_full_replicas_make_requests_wait_in_virtual_time_as_the_gateway_would():
    """One slot per replica: a burst waits in the director's waiting room (in virtual time) and is
    served as earlier requests finish, or refused with a 429 once its TTFT deadline passed; the
    ones that waited count the wait in their TTFT."""
    import dataclasses

    from gateway.fleet.workload.traces import Arrival

    cluster = parse_cluster("h100-70b:standard=1,fast=1")
    config = policy_config(cluster, "least-loaded")
    (model,) = config.models.values()
    variants = {name: dataclasses.replace(v, speed=dataclasses.replace(v.speed, max_num_seqs=1))
                for name, v in model.variants.items()}
    config = dataclasses.replace(config, models={model.name: dataclasses.replace(model, variants=variants)})
    results = Replay(config, cluster.profiles()).run([Arrival(1.0, "chat", 500, 64) for _ in range(6)])
    served = sorted((r for r in results if r.status == "ok"), key=lambda r: r.ttft_s)
    refused = [r for r in results if r.status != "ok"]
    assert len(served) >= 3 and all(r.status == "rejected" and r.refusal_status == 429 for r in refused)
    first_done = min(r.e2e_s for r in served[:2])
    assert served[2].ttft_s > first_done  # the third started only after a slot freed


def test_replay_takes_a_trace_file_and_names_what_it_cannot_use(tmp_path, capsys):
    import json

    from gateway.cli import main

    trace = tmp_path / "conv.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": 500 * i, "input_length": 300, "output_length": 20}) + "\n"
                             for i in range(20)))
    assert main(["replay", "--trace", f"coding={trace}", "--duration", "9.6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["requests"] == 20 and set(out["policies"]["duet"]["slo_attainment_by_task"]) == {"coding"}
    assert main(["replay", "--trace", f"poetry={trace}", "--duration", "10"]) == 2
    assert "task 'poetry' (from --trace) is not a task type of policy 'duet'" in capsys.readouterr().err
    assert main(["replay", "--trace", str(tmp_path / "none.csv"), "--duration", "10"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_without_forced_lengths_the_router_learns_each_tasks_median_output():
    """No oracle: requests send their client's max_tokens only; after a few hundred answers per
    task the length the router plans with is within 20% of the task's median (the engine still
    generates the trace's lengths, so the forced and the learned replay serve the same tokens)."""
    import statistics

    cluster = parse_cluster("h100-70b:standard=1,fast=3")
    schedule = arrivals(["code", "conv"], 900, 0.35, cluster)
    config = policy_config(cluster, "duet")
    learned = Replay(config, cluster.profiles()).run(schedule)
    for task in ("chat", "coding"):
        done = [r for r in learned if r.task == task and r.status == "ok"]
        median = statistics.median(r.output_tokens for r in done)
        assert len(done) > 300
        # The estimate follows recent answers (the trace drifts): its median over the last 200 plans.
        planned = statistics.median(r.expected_output_tokens for r in done[-200:])
        assert abs(planned - median) <= 0.2 * median
    forced = Replay(config, cluster.profiles(), ReplaySettings(forced_length=True)).run(schedule[:200])
    assert all(r.expected_output_tokens == r.output_tokens for r in forced if r.status == "ok")
    assert [r.output_tokens for r in forced] == [r.output_tokens for r in learned[:200]]


def test_the_router_plans_with_the_quantile_of_learned_lengths_it_is_given():
    cluster = parse_cluster("h100-70b:standard=1,fast=3")
    schedule = arrivals(["code"], 600, 0.35, cluster)
    config = policy_config(cluster, "duet")
    planned = {q: sorted(r.expected_output_tokens for r in Replay(config, cluster.profiles(), ReplaySettings(length_quantile=q))
                         .run(schedule)[-100:]) for q in (0.25, 0.5)}
    assert planned[0.25][50] < planned[0.5][50]


@pytest.mark.parametrize("factor", [0.7, 1.3])
def test_a_30_percent_prior_error_is_learned_away(factor):
    """Speed priors 30% off (every variant too fast, or too slow): after two minutes Duet's latency
    predictions on the variants it serves are within 5 points of MAPE of the exact priors'."""
    from gateway.fleet.replay.report import predictor_mape
    from gateway.fleet.replay.setup import PriorError

    cluster = parse_cluster("h100-70b:standard=1,fast=3")
    schedule = arrivals(["code", "conv"], 600, 0.35, cluster)

    def mape(error):
        config = policy_config(cluster, "duet", error)
        # Forced lengths: the error measured is the latency model's, not the length estimate's.
        forced = ReplaySettings(forced_length=True)
        results = [r for r in Replay(config, cluster.profiles(), forced).run(schedule) if r.arrival_s > 120]
        served = {v for v in ("standard", "fast") if sum(r.variant == v for r in results) >= 30}
        return {v: m for v, m in predictor_mape(results).items() if v in served}

    exact, wrong = mape(None), mape(PriorError({"standard": (factor, factor), "fast": (factor, factor)}))
    assert "fast" in exact and set(wrong) == set(exact)
    for variant, metrics in exact.items():
        for metric in ("ttft", "e2e"):
            assert wrong[variant][metric] <= metrics[metric] + 0.05


def infinite_cache_hit_rate(schedule, block_size):
    """The hit rate a cache that never evicts would reach: an upper bound for any engine's."""
    seen, hits, total = set(), 0, 0
    for a in schedule:
        hashes = a.blocks.chained(block_size, a.input_tokens)
        leading = next((i for i, h in enumerate(hashes) if h not in seen), len(hashes))
        hits += min(leading, (a.input_tokens - 1) // block_size) * block_size
        total += a.input_tokens
        seen.update(hashes)
    return hits / total


def test_mooncake_prompts_reach_the_engines_with_their_prefix_structure():
    cluster = parse_cluster("h100-70b:standard=1,fast=1")
    schedule = arrivals(["mooncake"], 120.0, 0.3, cluster)
    assert schedule and all(a.blocks is not None for a in schedule)
    stripped = tuple(dataclasses.replace(a, blocks=None) for a in schedule)
    config = policy_config(cluster, "always-standard")
    shared = Replay(config, cluster.profiles()).run(schedule)
    alone = Replay(config, cluster.profiles()).run(stripped)
    with_cache, without = summarize(shared, 120.0), summarize(alone, 120.0)
    assert without["prefix_hit_rate"] == 0.0
    # the trace's reuse reaches vLLM's cache, up to what a cache that never evicts would find
    bound = infinite_cache_hit_rate(schedule, cluster.profiles()["standard"].engine.block_size)
    assert bound / 2 < with_cache["prefix_hit_rate"] <= bound
    assert with_cache["ttft_ms"]["p50"] < without["ttft_ms"]["p50"]


def conversations(count: int, turns: int, gap_s: float) -> tuple[Arrival, ...]:
    """``count`` interleaved conversations whose turn n+1 repeats turn n's prompt and adds a block."""
    arrivals_ = []
    for c in range(count):
        for turn in range(turns):
            ids = tuple(1000 * c + b for b in range(4 + turn))  # 2,048 tokens of context, then 512 a turn
            arrivals_.append(Arrival(turn * gap_s + c * gap_s / count, "chat", 512 * len(ids) - 100, 50, 500,
                                     PromptBlocks(ids, 512)))
    return tuple(sorted(arrivals_, key=lambda a: a.at_s))


def test_the_gateways_prefix_index_keeps_conversations_on_the_replica_that_holds_them():
    cluster = parse_cluster("h100-70b:standard=3,fast=0")
    schedule = conversations(23, 5, 2.0)  # busy enough that least-loaded spreads them over the replicas
    bound = infinite_cache_hit_rate(schedule, 16)
    hit_rate = {policy: summarize(Replay(policy_config(cluster, policy), cluster.profiles()).run(schedule), 60.0)
                ["prefix_hit_rate"] for policy in ("least-loaded", "llm-d-default", "production-stack-prefixaware")}
    # llm-d's prefix-cache scorer (weight 3) and production-stack's longest-prefix pick read the
    # index the replay's dispatches taught them: every later turn finds its history; least-loaded
    # sends a turn where its history is only by chance.
    assert hit_rate["llm-d-default"] > 0.95 * bound
    assert hit_rate["production-stack-prefixaware"] > 0.95 * bound
    assert hit_rate["least-loaded"] < 0.75 * bound


def _detections(row: list[float]) -> UnseenDetections:
    """Every chat and coding prompt answered ``row`` (over the blend detector's task order)."""
    tasks = ["chat", "coding", "reasoning", "extraction", "long-context", "agent"]
    return UnseenDetections.of({"tasks": tasks, "detections": {"chat": {"a": [row]}, "coding": {"a": [row, row]}}})


def test_a_request_naming_no_task_is_routed_on_its_drawn_detection_by_every_policy():
    """Drawn as surely reasoning (which the fp8 fast variant's parity refuses), no request that
    names no task reaches fast, under Duet and a baseline alike; named, many do."""
    cluster = parse_cluster("h100-70b:standard=1,fast=1")
    schedule = arrivals(["code", "conv"], 60.0, 0.3, cluster)
    unnamed = ReplaySettings(unnamed_share=1.0, detections=_detections([0, 0, 1, 0, 0, 0]))
    for policy in ("duet", "least-loaded"):
        config = policy_config(cluster, policy)
        named = Replay(config, cluster.profiles()).run(schedule)
        drawn = Replay(config, cluster.profiles(), unnamed).run(schedule)
        assert any(r.variant == "fast" for r in named) and len(drawn) == len(schedule)
        assert {r.variant for r in drawn} == {"standard"}


def test_a_sure_and_right_detection_routes_as_the_named_task_and_a_share_names_the_rest():
    cluster = parse_cluster("h100-70b:standard=1,fast=1")
    schedule = arrivals(["code", "conv"], 60.0, 0.3, cluster)
    config = policy_config(cluster, "duet")
    named = Replay(config, cluster.profiles()).run(schedule)
    chat_sure = _detections([1, 0, 0, 0, 0, 0])  # right for the conv trace's chat, wrong for code's coding
    conv_only = [a for a in schedule if a.task == "chat"]
    drawn = Replay(config, cluster.profiles(), ReplaySettings(unnamed_share=1.0, detections=chat_sure)).run(conv_only)
    assert [(r.variant, r.ttft_s) for r in drawn] == \
        [(r.variant, r.ttft_s) for r in Replay(config, cluster.profiles()).run(conv_only)]
    half = Replay(config, cluster.profiles(), ReplaySettings(unnamed_share=0.5, detections=_detections([0, 0, 1, 0, 0, 0])))
    mixed = half.run(schedule)
    on_fast = sum(r.variant == "fast" for r in mixed)
    assert 0 < on_fast < sum(r.variant == "fast" for r in named)
    with pytest.raises(ValueError, match="needs detections"):
        Replay(config, cluster.profiles(), ReplaySettings(unnamed_share=0.5))


def test_an_unnamed_request_on_a_key_naming_its_task_routes_as_if_it_named_it():
    """The code trace's application keyed with its task (ApiKey.tasks): its requests, unnamed and
    detected as reasoning (fast refused), route exactly as named; the conv trace's stay detected."""
    cluster = parse_cluster("h100-70b:standard=1,fast=1")
    config = policy_config(cluster, "duet")
    coding_only = [a for a in arrivals(["code", "conv"], 60.0, 0.3, cluster) if a.task == "coding"]
    reasoning = _detections([0, 0, 1, 0, 0, 0])
    keyed = ReplaySettings(unnamed_share=1.0, detections=reasoning, keyed_tasks=frozenset({"coding"}))
    named = Replay(config, cluster.profiles()).run(coding_only)
    assert any(r.variant == "fast" for r in named)
    assert [(r.variant, r.ttft_s) for r in Replay(config, cluster.profiles(), keyed).run(coding_only)] == \
        [(r.variant, r.ttft_s) for r in named]
    chat_keyed = ReplaySettings(unnamed_share=1.0, detections=reasoning, keyed_tasks=frozenset({"chat"}))
    assert {r.variant for r in Replay(config, cluster.profiles(), chat_keyed).run(coding_only)} == {"standard"}


def test_a_prompt_under_the_long_context_size_is_not_long_context_however_it_is_detected():
    """The replayed policies define long-context as a prompt over 8k tokens (their size rule), so
    a detection of it on a shorter one is set aside: those requests may still go fast."""
    cluster = parse_cluster("h100-70b:standard=1,fast=1")
    schedule = [a for a in arrivals(["code", "conv"], 60.0, 0.3, cluster) if a.input_tokens <= 8192]
    settings = ReplaySettings(unnamed_share=1.0, detections=_detections([0.05, 0.05, 0, 0, 0.9, 0]))
    drawn = Replay(policy_config(cluster, "duet"), cluster.profiles(), settings).run(schedule)
    assert any(r.variant == "fast" for r in drawn)
