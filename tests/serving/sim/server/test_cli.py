"""``duet sim`` and ``python -m serving.sim``."""

from __future__ import annotations

import subprocess
import sys

from gateway.cli import build_parser


def test_duet_sim_registers_its_flags() -> None:
    args = build_parser(["sim"]).parse_args(["sim", "--port", "9", "--profile", "fast-test", "--time-scale", "5",
                                            "--seed", "2", "--error-rate", "0.1", "--error-kinds", "429,503",
                                            "--die-after-tokens", "3", "--hang", "--slowdown", "2"])
    assert (args.port, args.profile, args.time_scale, args.seed) == (9, "fast-test", 5.0, 2)
    assert (args.error_rate, args.error_kinds, args.die_after_tokens, args.hang, args.slowdown) == (0.1, "429,503", 3, True, 2.0)
    assert callable(args.run)


def test_bad_profile_exits_2_with_the_reason() -> None:
    result = subprocess.run([sys.executable, "-m", "serving.sim", "--profile", "nope"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "no profile 'nope'" in result.stderr
