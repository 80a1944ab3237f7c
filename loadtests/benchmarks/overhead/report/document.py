"""The "Gateway overhead" section of docs/benchmarks.md, rendered from one run's record
(``docs/results/overhead.json``); ``python -m loadtests.sections`` writes it."""

from __future__ import annotations

from loadtests.benchmarks.overhead.measure.machine import describe_busy
from loadtests.benchmarks.overhead.measure.modes import ALL_MODES, MESSAGES_GATEWAYS, RESPONSES_GATEWAYS
from loadtests.benchmarks.overhead.measure.run import RunResult
from loadtests.benchmarks.overhead.report.results import RunRecord
from loadtests.benchmarks.overhead.report.summary import detection_goals, goals, goals_text, markdown_table, production_goals
from loadtests.benchmarks.overhead.stack.canned import CONTENT_TOKENS, canned_responses


def _busy_warning(result: RunResult) -> str:
    if max(result.busy_before.values(), default=0.0) < 0.15:
        return ""
    return ("\n**These numbers are skewed by that other work** (gateways got part of their core; "
            "see the gateway CPU column): re-run on a quiet machine before quoting them.")


def section(record: RunRecord) -> str:
    """Markdown for the section: command, machine, method, numbers, goals."""
    result, plan, gateway_core, host = record.result, record.plan, record.gateway_core, record.host
    versions = ", ".join(f"{name} {version}" for name, version in result.versions.items())
    ceiling = "; ".join(f"{mode.name} {result.backend_ceiling[mode.name].rps:.0f} req/s" for mode in ALL_MODES)
    canned = canned_responses()
    events, responses_events = canned.sse_event_count, len(canned.responses_sse_events)
    responses_peers = " and ".join(sorted(RESPONSES_GATEWAYS - {"direct"}))
    messages_peers = " and ".join(sorted(MESSAGES_GATEWAYS - {"direct"}))
    messages_events = len(canned.messages_sse_events)
    return f"""\
## Gateway overhead

Measured {record.date} with `{record.command}` (the harness is `loadtests/benchmarks/overhead/`; the run's record is
`docs/results/overhead.json`, which this section is rendered from).

**Machine.** {host.cpus} cores ({host.cpu_model}; {host.hardware_class}), Linux {host.kernel}. Versions: {versions}.
Other work on the machine just before the run: {describe_busy(result.busy_before)} busy.{_busy_warning(result)}

**Method.** Each gateway runs alone on core {gateway_core} (`taskset`); the backend (nginx + Lua
with canned vLLM-shaped answers) and the load generator (`wrk`, one thread) share core
{plan.load_core}. Requests are the same chat body for every gateway (logical model `smollm2`,
{len(CONTENT_TOKENS)} output tokens). A non-stream answer is one JSON body with `Content-Length`; a
stream is {events} SSE events (role, {len(CONTENT_TOKENS)} tokens, finish, usage, `[DONE]`), chunked, one write each
as vLLM does. The `responses` and `responses-stream` rows (issue #20) send the same question to
`POST /v1/responses` (`input`, `max_output_tokens` {len(CONTENT_TOKENS)}) and get vLLM 0.32's Responses answers:
one `response` object, or {responses_events} SSE events (`response.created`, `in_progress`, item and part added,
{len(CONTENT_TOKENS)} `output_text.delta`, the four `done` events, `response.completed`); they run for the direct
connection, {responses_peers} (vllm-router 0.1.17 routes `/v1/responses`). The `messages` and
`messages-stream` rows send it to Anthropic's `POST /v1/messages` and get vLLM 0.32's Messages
answers (one `message`, or {messages_events} SSE events from `message_start` to `message_stop`); they run for the
direct connection and {messages_peers} only: vllm-router 0.1.17 has no `/v1/messages` route.
Per gateway and mode: {plan.warmup_s:g} s warm-up, then a latency phase on one
connection ({plan.latency_s:g} s: p50/p99; added p50 = gateway p50 - direct p50), then a throughput
phase on {plan.connections} connections ({plan.throughput_s:g} s: req/s, loaded p50/p99, errors,
and the gateway's CPU use: 100% = its core saturated). The backend's own ceiling, measured with
wrk on the other core, is {ceiling}; the `direct` rows are the ceiling of the load core as the
gateways see it (backend and wrk sharing it), so a gateway near them is limited by the load core,
not by itself. To compare a change before and after on a busy machine, where these req/s move
with other work, `python -m loadtests.benchmarks.overhead.cpu_cost` measures Duet's CPU time per request.

{markdown_table(result.measurements, result.skipped)}

Goals (issue #3; the Responses and Messages rows: issue #20):

{goals_text(goals(result.measurements))}

Goals of the production path (issue #19: keys on with every limit set, two variants of two replicas, the
reference config's rules; against vllm-router and against the same config with keys off):

{goals_text(production_goals(result.measurements))}

The task detector's cost (issue #28: `duet` against `duet-detector-off`, the same config with
`routing.task_detector.enabled: false`, measured back to back in this run):

{goals_text(detection_goals(result.measurements))}
"""
