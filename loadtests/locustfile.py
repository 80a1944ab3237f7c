"""Duet's locust scenarios: ``locust -f loadtests/locustfile.py --host http://127.0.0.1:8000``.

Users per task type (coding and chat with lengths from the Azure 2023 traces, a two-turn agent
with a tool, long-document extraction), every request streamed with its output length forced and
its SLO in ``x-slo-ttft-ms`` / ``x-slo-tpot-ms``; TTFT and TPOT appear as request types of their
own. ``--duet-shape trace`` replays the traces' arrival times (``--duet-rate-scale``,
``--duet-time-scale``); ``step`` and ``ramp`` are the usual shapes. ``locust -f ... --help`` lists
every ``--duet-*`` option. Traces: Azure LLM inference trace 2023, CC-BY 4.0, Patel et al.,
"Splitwise", ISCA 2024 (loadtests/traces/README.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# `locust -f loadtests/locustfile.py` imports this file by path: make the repo importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locust import events  # noqa: E402

from loadtests.context import LoadContext, add_options  # noqa: E402
from loadtests.shapes import DuetShape  # noqa: E402,F401  (locust finds the shape here)
from loadtests.users import AgentUser, ChatUser, CodingUser, ExtractionUser, TraceReplayUser  # noqa: E402,F401


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    add_options(parser)


@events.init.add_listener
def _context(environment: Any, **_: Any) -> None:
    environment.duet = LoadContext.from_options(environment.parsed_options)
    # Built now too, since a shape's first tick comes before test_start; rebuilt there.
    environment.duet.start_test()


@events.test_start.add_listener
def _start(environment: Any, **_: Any) -> None:
    environment.duet.start_test()


@events.test_stop.add_listener
def _stop(environment: Any, **_: Any) -> None:
    environment.duet.sink.flush()
