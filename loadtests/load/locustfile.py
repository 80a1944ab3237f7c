"""Duet's locust scenarios: ``locust -f loadtests/load/locustfile.py --host http://127.0.0.1:8000``.

Users per task type (coding and chat with lengths from the Azure 2023 traces, a two-turn agent
with a tool, long-document extraction), every request streamed, its traced output length told to
a simulated replica alone (``--duet-forced-length`` forces it, an oracle for the gateway), and
its SLO in ``x-slo-ttft-ms`` / ``x-slo-tpot-ms``; TTFT and TPOT appear as request types of their
own. ``ConversationUser`` (multi-turn, each turn resending the history) and ``AgentLoopUser``
(tool call, tool result, next turn) repeat a growing prefix in one ``x-session-id`` session; they
run when named (``locust -f ... ConversationUser AgentLoopUser``). ``--duet-shape trace`` replays
the traces' arrival times (``--duet-rate-scale``, ``--duet-time-scale``); ``step`` and ``ramp`` are
the usual shapes. ``locust -f ... --help`` lists every ``--duet-*`` option. Traces: Azure LLM
inference trace 2023, CC-BY 4.0, Patel et al., "Splitwise", ISCA 2024 (gateway/fleet/workload/data/README.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# `locust -f loadtests/load/locustfile.py` imports this file by path: make the repo importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from locust import LoadTestShape, events  # noqa: E402

from loadtests.load.context import LoadContext, add_options  # noqa: E402
from loadtests.load.shapes import DRAIN_MODEL_S, Stage, ramp_stage, step_stage, trace_done  # noqa: E402
from loadtests.load.users import (  # noqa: E402,F401  (locust finds the user classes here)
    SESSION_USERS,
    TASK_USERS,
    AgentLoopUser,
    AgentUser,
    ChatUser,
    CodingUser,
    ConversationUser,
    ExtractionUser,
    TraceReplayUser,
)


def _options(parser: Any) -> None:
    add_options(parser)


def _context(environment: Any, **_: Any) -> None:
    environment.duet = LoadContext.from_options(environment.parsed_options, environment.host)
    # Built now too, since a shape's first tick comes before test_start; rebuilt there.
    environment.duet.start_test()


def _start(environment: Any, **_: Any) -> None:
    environment.duet.fit_to(environment.host)
    environment.duet.start_test()


def _stop(environment: Any, **_: Any) -> None:
    environment.duet.sink.flush()
    if environment.duet.tally.drawn:
        print(environment.duet.tally.report("users' requests"), file=sys.stderr)


events.init_command_line_parser.add_listener(_options)  # type: ignore[no-untyped-call]
events.init.add_listener(_context)  # type: ignore[no-untyped-call]
events.test_start.add_listener(_start)  # type: ignore[no-untyped-call]
events.test_stop.add_listener(_stop)  # type: ignore[no-untyped-call]


class DuetShape(LoadTestShape):
    """Dispatches on ``--duet-shape`` to the plans in ``loadtests.load.shapes``."""

    use_common_options = True

    def tick(self) -> tuple[int, float, list[type]] | None:
        assert self.runner is not None
        environment: Any = self.runner.environment
        options: Any = environment.parsed_options
        elapsed: float = self.get_run_time()  # type: ignore[no-untyped-call]
        mode = options.duet_shape
        if mode == "trace":
            ctx = environment.duet
            if trace_done(ctx.elapsed(), ctx.last_arrival_s, ctx.in_flight, DRAIN_MODEL_S / options.duet_time_scale):
                return None
            users = options.duet_trace_users
            return users, float(users), [TraceReplayUser]
        # The task users' mix, or the users named on the command line (session users run only when named).
        named = set(options.user_classes or ())
        task_users = [c for c in TASK_USERS + SESSION_USERS if c.__name__ in named] or list(TASK_USERS)
        if options.run_time and elapsed > options.run_time:
            return None
        peak = options.num_users or 1
        if mode == "step":
            stage = step_stage(elapsed, options.duet_step_users, options.duet_step_seconds, peak)
        elif mode == "ramp":
            stage = ramp_stage(elapsed, peak, options.duet_ramp_seconds)
        else:
            stage = Stage(peak, float(options.spawn_rate or peak))
        return stage.users, stage.spawn_rate, task_users
