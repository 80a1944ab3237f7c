"""``duet replay``'s arguments, sweeps' included: importable without what a replay runs (the
simulator, the priced replica sets, the lifecycle), so ``duet replay --help`` answers at once.
The command itself is ``replay.py`` (and ``sweep.py``), which the CLI imports to run it."""

from __future__ import annotations

import argparse

from gateway.fleet.replay.windows import WINDOWS

# The policies ``--compare`` replays, the policy asked for last.
COMPARED = ("always-standard", "always-fast", "round-robin", "least-loaded", "litellm-style", "static-split",
            "llm-d-default", "production-stack-prefixaware", "duet")
DEFAULT_START, DEFAULT_DURATION, DEFAULT_SHIFT = 0.0, 3600.0, 60.0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("replay", help="replay a trace through a routing policy in virtual time (no HTTP)")
    parser.add_argument("--trace", default="code,conv",
                        help="comma-separated traces: shipped (code -> coding, conv -> chat, mooncake -> chat with "
                             "its prompts' prefix blocks), or a .csv (Azure columns) or .jsonl (Mooncake fields, "
                             "hash_ids kept) path, as TASK=PATH (a bare PATH is chat)")
    parser.add_argument("--replicas", default="h100-70b:standard=1,fast=3",
                        help="replica set and counts, e.g. h100-70b:standard=1,fast=3")
    parser.add_argument("--policy", default="duet",
                        help="a shipped policy name or a duet.yaml path, with engine suffixes: @pd=P:D[+F]:RULE "
                             "(prefill/decode roles), @chunk=N or @chunk=VARIANT:[Kx]N+...[:VARIANT:...] (chunk "
                             "budgets; gateway/fleet/replay/policy_names.py)")
    parser.add_argument("--compare", action="store_true", help=f"also run {', '.join(COMPARED[:-1])}")
    parser.add_argument("--rate-scale", type=float, default=1.0, help="multiply the trace's arrival rate")
    parser.add_argument("--duration", type=float, default=DEFAULT_DURATION, help="seconds of trace to replay")
    parser.add_argument("--start", type=float, default=DEFAULT_START, help="trace second to start at")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=1,
                        help="replay this many seeds (seed, seed+1, ...) and report means with 95%% intervals; "
                             "seed k also shifts the window by k x --shift")
    parser.add_argument("--shift", type=float, default=DEFAULT_SHIFT,
                        help="trace seconds each further seed's window starts later (negative: earlier)")
    parser.add_argument("--forced-length", action="store_true",
                        help="requests force their trace's output length (min_tokens = max_tokens, ignore_eos), which "
                             "tells the router the true length: an oracle, for comparison")
    parser.add_argument("--prior-error", type=float, default=0.3,
                        help="the router's speed priors are off by this fraction per variant (prefill and decode, "
                             "each too fast or too slow by a seeded coin), for the online learner to correct; 0: "
                             "the simulator's own profiles, exactly")
    parser.add_argument("--unnamed-share", type=float, default=0.0, metavar="SHARE",
                        help="the share of requests that name no task (no x-duet-task); each is given what the shipped "
                             "task detector answered on an unseen prompt of its task (gateway/fleet/world/detections.py), "
                             "for every policy alike. 0 (default): every request names its task")
    parser.add_argument("--keyed-tasks", type=_task_list, default=(), metavar="TASK[,TASK...]",
                        help="with --unnamed-share: the unnamed requests of these tasks come on an API key that names "
                             "their task (a team that keys each application: duet keys create --tasks), for every "
                             "policy alike")
    parser.add_argument("--length-quantile", type=float, default=0.5,
                        help="which quantile of each task's learned output lengths the router plans with")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--out", help="also write the JSON object (with the command that made it) to this file")
    parser.add_argument("--rerun", metavar="POLICIES",
                        help="with --compare (or a sweep) and --out: replay only these policies (comma-separated) and "
                             "keep the others' results from the --out file, which must come from the same command "
                             "(replays are deterministic: a new or changed policy without rerunning every policy)")
    add_sweep_arguments(parser)


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("sweeps to the knee")
    group.add_argument("--sweep", metavar="LOADS",
                       help="replay every policy at each of these loads (rate multiples, comma-separated) and report "
                            "good share against load and the goodput at 99%% and 95%% good")
    group.add_argument("--sweep-search", metavar="LO:HI",
                       help="search the highest load in LO:HI meeting each constraint set (bracket, then bisection)")
    group.add_argument("--search-steps", type=int, default=4, help="bisection steps after the bracket (default 4)")
    group.add_argument("--sla", metavar="FILE",
                       help="vLLM serve_sla constraints, e.g. {\"p99_e2el_ms\": \"<=500\"} or a list of such objects "
                            "(default: good_fraction >= 0.99 and >= 0.95, Duet's own per-request budgets)")
    group.add_argument("--policies", help="with a sweep: these policies (comma-separated) instead of --policy/--compare")
    group.add_argument("--window", choices=sorted(WINDOWS),
                       help="a named window (its start, trace seconds and shift; see gateway/fleet/replay/windows.py)")
    group.add_argument("--jobs", type=int, default=1, help="worker processes (results identical to --jobs 1)")


def _task_list(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for t in (part.strip() for part in text.split(",")) if t))
