"""The packages' dependencies point one way (docs/architecture.md). Every import of the project's
own modules, module-level or inside a function, is read from the source and checked against the
intended direction; an import against it fails here with the file and line."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("gateway", "serving", "quantize", "loadtests")
# The command shell composes the packages (it starts servers, replicas, quantization, parity runs
# and load tests); deploy rendering reads the launch profiles. Nothing else crosses packages.
COMMAND_SHELL = ("gateway.cli", "gateway.deploy")
# The vocabulary every layer speaks: the domain types, the value types beneath them (a variant's
# speed and cost), the router's decision, a request's outcome.
VOCABULARY = ("gateway.domain", "gateway.speed", "gateway.cost", "gateway.decision", "gateway.outcome")


def _imports(package: str) -> Iterator[tuple[str, str, int]]:
    """(importing module, imported module, line) for every project import under ``package``."""
    for path in sorted((ROOT / package).rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] in PROJECT:
                    yield module, name, node.lineno


def _within(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _violations(package: str, allowed: object) -> list[str]:
    return [f"{src} imports {dst} (line {line})" for src, dst, line in _imports(package)
            if not allowed(src, dst)]  # type: ignore[operator]


def test_the_vocabulary_imports_nothing_of_the_project_but_itself():
    assert _violations("gateway", lambda src, dst: src not in VOCABULARY or dst in VOCABULARY) == []
    # The domain imports only the value types beneath it; speed imports nothing, cost only speed.
    beneath = {"gateway.domain": {"gateway.speed", "gateway.cost"}, "gateway.cost": {"gateway.speed"}, "gateway.speed": set()}
    assert [(src, dst) for src, dst, _ in _imports("gateway") if src in beneath and dst not in beneath[src]] == []


def test_routing_imports_only_the_vocabulary():
    assert [v for v in _violations("gateway", lambda src, dst: not _within(src, "gateway.routing")
                                   or _within(dst, *VOCABULARY, "gateway.routing"))] == []


def test_autoscaling_imports_only_the_vocabulary():
    assert [v for v in _violations("gateway", lambda src, dst: not _within(src, "gateway.scaling")
                                   or _within(dst, *VOCABULARY, "gateway.scaling"))] == []


def test_replica_state_imports_only_the_vocabulary_and_the_autoscaling_arithmetic():
    # The demand store (state/demand.py, state/redis/demand.py) keeps its windows with scaling's pure meter.
    assert [v for v in _violations("gateway", lambda src, dst: not _within(src, "gateway.state")
                                   or _within(dst, *VOCABULARY, "gateway.state", "gateway.scaling"))] == []


def test_the_proxied_apis_import_only_the_vocabulary_the_errors_and_the_relays_framing():
    # gateway/endpoints sits below the lifecycle (flow reads its bodies) and the HTTP layer (api
    # serves its registry): it imports neither.
    below = (*VOCABULARY, "gateway.endpoints", "gateway.errors", "gateway.proxy.framing", "gateway.proxy.sse")
    assert _violations("gateway", lambda src, dst: not _within(src, "gateway.endpoints") or _within(dst, *below)) == []


def test_sessions_sit_below_the_lifecycle():
    # Planning reads a request's session (from its body: gateway.endpoints), the session's seat and the
    # policy; the seats are shared through the state's Redis link.
    assert [v for v in _violations("gateway", lambda src, dst: not _within(src, "gateway.sessions")
                                   or _within(dst, *VOCABULARY, "gateway.sessions", "gateway.state",
                                              "gateway.endpoints"))] == []


def test_tracing_is_a_subscriber_above_the_lifecycle():
    assert [v for v in _violations("gateway", lambda src, dst: not _within(src, "gateway.tracing")
                                   or _within(dst, *VOCABULARY, "gateway.errors", "gateway.endpoints", "gateway.flow",
                                              "gateway.tracing"))] == []


def test_the_autoscaling_gauge_counts_on_the_lifecycles_hooks_and_sizes_with_the_arithmetic():
    assert [v for v in _violations("gateway", lambda src, dst: not _within(src, "gateway.autoscaling")
                                   or _within(dst, *VOCABULARY, "gateway.errors", "gateway.config", "gateway.flow",
                                              "gateway.scaling", "gateway.state", "gateway.autoscaling"))] == []


def test_online_parity_never_imports_the_http_layer_or_the_other_subscribers():
    assert _violations("gateway", lambda src, dst: not _within(src, "gateway.parity") or not _within(
        dst, "gateway.api", "gateway.runtime", "gateway.cli", "gateway.autoscaling", "gateway.tracing")) == []


def test_nothing_but_the_command_shell_reaches_into_the_http_layer():
    assert _violations("gateway", lambda src, dst: not _within(dst, "gateway.api")
                       or _within(src, "gateway.api", *COMMAND_SHELL)) == []


def test_discovery_reads_only_the_config_and_the_vocabulary():
    # Where replicas come from (static lists, EndpointSlices, an InferencePool's pods) is decided
    # before any request: it never reaches the lifecycle, routing, state or the HTTP layer.
    assert _violations("gateway", lambda src, dst: not _within(src, "gateway.discovery") or _within(
        dst, *VOCABULARY, "gateway.discovery", "gateway.config", "gateway.errors")) == []


def test_the_endpoint_picker_is_a_caller_of_the_lifecycle_beside_the_http_layer():
    # gateway/epp drives the director as api/serving.py does (the composer's Gateway, the proxied
    # APIs' bodies, the relay's stream tally); of the lifecycle it reads only gateway.flow's public
    # surface, and it never reaches into the HTTP layer, the fleet or the subscribers' rooms. Its
    # process says where the Kubernetes API is (its pool's pods), as the proxy's does.
    assert _violations("gateway", lambda src, dst: not _within(src, "gateway.epp") or (
        _within(dst, *VOCABULARY, "gateway.epp", "gateway.errors", "gateway.config", "gateway.runtime",
                "gateway.endpoints", "gateway.access", "gateway.proxy", "gateway.sessions", "gateway.logs")
        or dst in ("gateway.flow", "gateway.discovery.api"))) == []


def test_only_the_command_shell_starts_the_endpoint_picker():
    assert _violations("gateway", lambda src, dst: not _within(dst, "gateway.epp")
                       or _within(src, "gateway.epp", *COMMAND_SHELL)) == []


def test_the_flow_layer_never_imports_the_http_layer_the_runtime_or_its_subscribers_above_it():
    # Tracing, online parity's sampling and the autoscaling gauge read the lifecycle's types; the
    # composer (gateway.runtime, the replay) subscribes them, so flow never imports them.
    assert _violations("gateway", lambda src, dst: not _within(src, "gateway.flow") or not _within(
        dst, "gateway.api", "gateway.runtime", "gateway.cli", "gateway.tracing", "gateway.parity",
        "gateway.autoscaling")) == []


def test_the_gateway_uses_other_packages_only_from_its_command_shell_and_the_fleet():
    # The fleet's commands replay the router against the simulator (serving), nothing else.
    assert _violations("gateway", lambda src, dst: _within(dst, "gateway") or _within(src, *COMMAND_SHELL)
                       or (_within(src, "gateway.fleet") and _within(dst, "serving"))) == []


def test_the_fleet_uses_only_the_gateways_public_surfaces_and_the_simulator():
    # The lifecycle, the autoscaling gauge (the replay's autoscaled fleet), plugin names, serving's simulator.
    assert _violations("gateway", lambda src, dst: not _within(src, "gateway.fleet") or _within(dst, "gateway.fleet", "serving")
                       or dst in ("gateway.flow", "gateway.autoscaling", "gateway.routing.registry")) == []


def test_nothing_in_the_gateway_but_its_commands_imports_the_fleet():
    assert _violations("gateway", lambda src, dst: not _within(dst, "gateway.fleet")
                       or _within(src, "gateway.fleet", "gateway.cli")) == []


@pytest.mark.parametrize("package", ["serving", "quantize"])
def test_serving_and_quantize_import_no_gateway(package):
    assert _violations(package, lambda src, dst: not _within(dst, "gateway")) == []


# What code outside gateway/ may import of it (docs/architecture.md): the lifecycle and what its
# callers hand it (gateway.flow), the autoscaling gauge (gateway.autoscaling), online parity's
# draw (gateway.parity), routing's plugin names, the fleet's commands and what they replay with
# (gateway.fleet), the task detectors and the blend one's vectors (the latency benchmark builds them
# fresh), and the task detector's training room (gateway.detect.training, off the serving path: the
# detector benchmarks read it).
PUBLIC_SURFACES = ("gateway.epp", "gateway.flow", "gateway.autoscaling", "gateway.parity", "gateway.routing.registry",
                   "gateway.detect", "gateway.detect.blend_model", "gateway.detect.vectors")
DETECTOR_TRAINING = "gateway.detect.training"


def test_load_tests_use_only_the_gateways_public_surfaces():
    assert _violations("loadtests", lambda src, dst: not _within(dst, "gateway")
                       or dst in PUBLIC_SURFACES or _within(dst, "gateway.fleet", DETECTOR_TRAINING)) == []


def test_no_gateway_module_outside_the_training_room_imports_it_but_the_command_shell():
    assert _violations("gateway", lambda src, dst: not _within(dst, DETECTOR_TRAINING)
                       or _within(src, DETECTOR_TRAINING, *COMMAND_SHELL)) == []


def test_no_package_imports_the_load_tests_but_the_command_shell():
    offenders = [v for package in ("gateway", "serving", "quantize") for v in _violations(
        package, lambda src, dst: not _within(dst, "loadtests") or _within(src, *COMMAND_SHELL))]
    assert offenders == []


def _reads_tests(tree: ast.AST) -> Iterator[int]:
    """Lines that build a path into tests/: ``... / "tests"``, or a "tests/..." string in code
    (docstrings, which only point there, excepted)."""
    docstrings = {id(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) \
                and node.right.value == "tests":
            yield node.lineno
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("tests/") \
                and id(node) not in docstrings:
            yield node.lineno


def test_runtime_code_never_reads_the_tests_folder():
    offenders = [f"{path.relative_to(ROOT)}:{line}" for package in PROJECT
                 for path in sorted((ROOT / package).rglob("*.py")) for line in _reads_tests(ast.parse(path.read_text()))]
    assert offenders == []


def test_no_gateway_function_takes_more_than_six_parameters():
    """A function asking for more is asking for the object they belong to (self and cls not counted)."""
    offenders = []
    for path in sorted((ROOT / "gateway").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                count = len(names) + (args.vararg is not None) + (args.kwarg is not None)
                count -= bool(names) and names[0] in ("self", "cls")
                if count > 6:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({count})")
    assert offenders == []


# The rooms of loadtests/ (docs/architecture.md): what each may import of the others. Every room
# may also import the fleet (gateway.fleet: world, workload, replay, ...).
LOADTEST_ROOMS = {
    "loadtests.scoring": (),
    "loadtests.launch": (),
    "loadtests.load": ("loadtests.scoring",),
    "loadtests.benchmarks": ("loadtests.benchmarks", "loadtests.scoring", "loadtests.launch",
                             "loadtests.sections.section"),
    "loadtests.real": ("loadtests.real", "loadtests.scoring", "loadtests.launch", "loadtests.sections.section"),
    "loadtests.sections": ("loadtests",),
}


def _room(module: str) -> str | None:
    return next((room for room in LOADTEST_ROOMS if _within(module, room)), None)


def test_every_load_test_module_lives_in_a_room():
    modules = {src for src, _, _ in _imports("loadtests")}
    assert [m for m in modules if m != "loadtests" and _room(m) is None] == []


def test_load_test_rooms_import_only_the_rooms_below_them():
    def allowed(src: str, dst: str) -> bool:
        room = _room(src)
        return not _within(dst, "loadtests") or room is None or _within(dst, room, *LOADTEST_ROOMS[room])
    assert _violations("loadtests", allowed) == []


# The rooms of serving/sim/ (serving/sim/__init__.py): what each may import of the simulator.
SIM_BASE = ("serving.sim.profile", "serving.sim.parallel", "serving.sim.tokens")
SIM_ROOMS = {
    "serving.sim.engine": SIM_BASE,
    "serving.sim.fidelity": (*SIM_BASE, "serving.sim.engine"),
    "serving.sim.dialects": SIM_BASE,
    "serving.sim.answers": (*SIM_BASE, "serving.sim.dialects"),
    "serving.sim.server": ("serving.sim",),
}


def _sim_room(module: str) -> str | None:
    return next((room for room in SIM_ROOMS if _within(module, room)), None)


def test_every_simulator_module_lives_in_a_room_or_is_its_base() -> None:
    modules = {str(p.relative_to(ROOT).with_suffix("")).replace("/", ".") for p in (ROOT / "serving" / "sim").rglob("*.py")}
    assert [m for m in modules if _sim_room(m) is None
            and m not in (*SIM_BASE, "serving.sim.__init__", "serving.sim.__main__")] == []


def test_simulator_rooms_import_only_the_rooms_below_them() -> None:
    def allowed(src: str, dst: str) -> bool:
        room = _sim_room(src)
        return not _within(dst, "serving.sim") or room is None or _within(dst, room, *SIM_ROOMS[room])
    assert _violations("serving", allowed) == []


# Two more folders in rooms (each room's __init__): what each room may import of its neighbours.
NESTED_ROOMS = {
    "quantize.evals.checking": ("quantize.evals.checking",),
    "quantize.evals.tasks": ("quantize.evals.tasks", "quantize.evals.checking", "quantize.evals.items",
                             "quantize.evals.task"),
    "loadtests.benchmarks.overhead.stack": ("loadtests.benchmarks.overhead.stack",),
    "loadtests.benchmarks.overhead.measure": ("loadtests.benchmarks.overhead.measure",
                                              "loadtests.benchmarks.overhead.stack"),
    "loadtests.benchmarks.overhead.report": ("loadtests.benchmarks.overhead.report",
                                             "loadtests.benchmarks.overhead.measure",
                                             "loadtests.benchmarks.overhead.stack"),
}
NESTED_PARENTS = ("quantize.evals", "loadtests.benchmarks.overhead")


@pytest.mark.parametrize("package", ["quantize", "loadtests"])
def test_the_eval_and_overhead_rooms_import_only_the_rooms_below_them(package: str) -> None:
    def allowed(src: str, dst: str) -> bool:
        room = next((r for r in NESTED_ROOMS if _within(src, r)), None)
        return room is None or not _within(dst, *NESTED_PARENTS) or _within(dst, *NESTED_ROOMS[room])
    assert _violations(package, allowed) == []


# The rooms of gateway/fleet/ (gateway/fleet/__init__.py): what each may import of the others.
FLEET_ROOMS = {
    "gateway.fleet.workload": (),
    "gateway.fleet.world": (),
    "gateway.fleet.replay": ("gateway.fleet.world", "gateway.fleet.workload"),
    "gateway.fleet.sweep": ("gateway.fleet.replay", "gateway.fleet.world", "gateway.fleet.workload"),
    "gateway.fleet.capacity": ("gateway.fleet.replay", "gateway.fleet.world", "gateway.fleet.workload"),
    "gateway.fleet.commands": ("gateway.fleet",),
}


def _fleet_room(module: str) -> str | None:
    return next((room for room in FLEET_ROOMS if _within(module, room)), None)


def test_every_fleet_module_lives_in_a_room():
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
               for p in (ROOT / "gateway" / "fleet").rglob("*.py")}
    assert sorted(m for m in modules if m != "gateway.fleet" and _fleet_room(m) is None) == []


def test_fleet_rooms_import_only_the_rooms_below_them():
    def allowed(src: str, dst: str) -> bool:
        room = _fleet_room(src)
        return room is None or not _within(dst, "gateway.fleet") or _within(dst, room, *FLEET_ROOMS[room])
    assert _violations("gateway", allowed) == []


def test_the_workload_imports_nothing_of_the_project_but_itself():
    assert _violations("gateway", lambda src, dst: not _within(src, "gateway.fleet.workload")
                       or _within(dst, "gateway.fleet.workload")) == []


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _module_level(body: list[ast.stmt], type_only: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported (not those in function bodies); with
    ``type_only``, those under ``if TYPE_CHECKING:`` too."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            if type_only:
                yield from _module_level(node.body, type_only)
            yield from _module_level(node.orelse, type_only)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.ClassDef)):
            for block in (getattr(node, "body", []), getattr(node, "orelse", []), getattr(node, "finalbody", []),
                          *[h.body for h in getattr(node, "handlers", [])]):
                yield from _module_level(block, type_only)


def _import_graph(type_only: bool) -> dict[str, set[str]]:
    """Every project module -> the project modules its module-level imports load (``from a import b``
    points at ``a.b`` when that is a module, else at ``a``)."""
    paths = {_module_of(p): p for package in PROJECT for p in sorted((ROOT / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {module: set() for module in paths}
    for module, path in paths.items():
        for node in _module_level(ast.parse(path.read_text()).body, type_only):
            if isinstance(node, ast.ImportFrom):
                if node.level == 0 and node.module and node.module.split(".")[0] in PROJECT:
                    graph[module] |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in paths else node.module
                                      for a in node.names}
            else:
                graph[module] |= {a.name for a in node.names if a.name.split(".")[0] in PROJECT}
    return {module: {d for d in dsts if d in paths} for module, dsts in graph.items()}


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for dst in sorted(graph[module]):
            if dst not in index:
                visit(dst)
                low[module] = min(low[module], low[dst])
            elif dst in stack:
                low[module] = min(low[module], index[dst])
        if low[module] == index[module]:
            component = set(stack[stack.index(module):])
            del stack[stack.index(module):]
            if len(component) > 1 or module in graph[module]:
                found.append(component)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_package_has_an_import_cycle():
    assert _cycles(_import_graph(type_only=False)) == []


# Type-only import cycles (under ``if TYPE_CHECKING:``) known today, each to be broken: its issue.
KNOWN_TYPE_CYCLES: list[set[str]] = []


def test_no_new_type_only_import_cycle():
    assert [c for c in _cycles(_import_graph(type_only=True)) if c not in KNOWN_TYPE_CYCLES] == []


# Modules that import project modules inside a function, each for a reason (laziness, never to
# dodge an import cycle: test_no_package_has_an_import_cycle sees only module-level imports).
LAZY_IMPORTS = {
    "gateway.cli": "a command imports what it runs only when it runs (duet sim loads no gateway, duet check "
                   "no uvicorn, duet --help nothing)",
    "gateway.runtime": "the OpenTelemetry tracer (flow.tracing) only when server.otlp_traces_endpoint is set",
    "quantize.parity.real": "a launcher imports the replica it launches: real vLLM or the simulator",
    "loadtests.real.online_parity": "a launcher imports the replica it launches: real vLLM or the simulator",
    "loadtests.benchmarks.cli": "duet bench imports a benchmark's harness (locust, the stack) only when it runs",
}


def test_no_project_module_imports_the_project_inside_a_function_but_the_listed_lazy_ones():
    offenders = []
    for package in PROJECT:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = _module_of(path)
            if _within(module, *LAZY_IMPORTS):
                continue
            for function in ast.walk(ast.parse(path.read_text())):
                if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    offenders += [f"{module}:{node.lineno} in {function.name}" for node in ast.walk(function)
                                  if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                                      name.split(".")[0] in PROJECT for name in _names(node))]
    assert offenders == []


def test_every_lazy_import_exception_is_still_needed():
    lazy = {_module_of(path) for package in PROJECT for path in (ROOT / package).rglob("*.py")
            if any(isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(n, (ast.Import, ast.ImportFrom)) and any(m.split(".")[0] in PROJECT for m in _names(n))
                for n in ast.walk(f)) for f in ast.walk(ast.parse(path.read_text())))}
    assert [entry for entry in LAZY_IMPORTS if not any(_within(m, entry) for m in lazy)] == []


def _names(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module] if node.module and node.level == 0 else []
    return [alias.name for alias in node.names]
