"""The command table: every subcommand's module registers it, and a command loads only what it
needs (``duet sim`` no gateway, ``duet check`` no uvicorn), checked in a fresh interpreter."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from gateway.cli import SUBCOMMANDS, command, runner


@pytest.mark.parametrize("name", ["check", "explain", "replay", "plan", "plan-day", "deploy"])
def test_each_command_module_registers_its_subcommand(name):
    subparsers = argparse.ArgumentParser().add_subparsers()
    command(name).register(subparsers)
    assert name in subparsers.choices


def test_every_listed_subcommand_has_a_module():
    assert [name for name in SUBCOMMANDS if not callable(command(name).register)] == []


@pytest.mark.parametrize("name", ["replay", "plan", "plan-day"])
def test_a_fleet_command_registers_its_arguments_and_runs_from_its_own_module(name):
    subparsers = argparse.ArgumentParser().add_subparsers()
    command(name).register(subparsers)
    assert "run" not in subparsers.choices[name].parse_args(["--plan", "x"] if name == "plan-day" else [])
    assert callable(runner(name))


def test_an_unknown_subcommand_has_none():
    with pytest.raises(KeyError):
        command("nope")


@pytest.mark.parametrize(("name", "absent"), [("sim", "gateway.flow"), ("check", "uvicorn"),
                                              # the fleet's --help: no lifecycle, simulator or priced replica sets
                                              ("replay", "gateway.flow"), ("plan", "serving.sim.profile"),
                                              ("plan-day", "gateway.fleet.world.replica_sets")])
def test_a_command_loads_only_what_it_needs(name, absent):
    code = (f"import sys; from gateway.cli import build_parser; build_parser([{name!r}]); "
            f"print({absent!r} in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
