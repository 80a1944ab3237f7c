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
# The vocabulary every layer speaks: the domain types, the router's decision, a request's outcome.
VOCABULARY = ("gateway.domain", "gateway.decision", "gateway.outcome")


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
    assert [dst for src, dst, _ in _imports("gateway") if src == "gateway.domain"] == []


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


def test_sessions_sit_below_the_lifecycle():
    # Planning reads a session's seat and the policy; the seats are shared through the state's Redis link.
    assert [v for v in _violations("gateway", lambda src, dst: not _within(src, "gateway.sessions")
                                   or _within(dst, *VOCABULARY, "gateway.sessions", "gateway.state"))] == []


def test_tracing_is_a_subscriber_above_the_lifecycle():
    assert [v for v in _violations("gateway", lambda src, dst: not _within(src, "gateway.tracing")
                                   or _within(dst, *VOCABULARY, "gateway.errors", "gateway.flow",
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


def test_the_flow_layer_never_imports_the_http_layer_the_runtime_or_its_subscribers_above_it():
    # Tracing, online parity's sampling and the autoscaling gauge read the lifecycle's types; the
    # composer (gateway.runtime, the replay) subscribes them, so flow never imports them.
    assert _violations("gateway", lambda src, dst: not _within(src, "gateway.flow") or not _within(
        dst, "gateway.api", "gateway.runtime", "gateway.cli", "gateway.tracing", "gateway.parity",
        "gateway.autoscaling")) == []


def test_the_gateway_uses_other_packages_only_from_its_command_shell():
    assert _violations("gateway", lambda src, dst: _within(dst, "gateway") or _within(src, *COMMAND_SHELL)) == []


@pytest.mark.parametrize("package", ["serving", "quantize"])
def test_serving_and_quantize_import_no_gateway(package):
    assert _violations(package, lambda src, dst: not _within(dst, "gateway")) == []


# What code outside gateway/ may import of it (docs/architecture.md): the lifecycle and what its
# callers hand it (gateway.flow), the autoscaling gauge (gateway.autoscaling), online parity's
# draw (gateway.parity), routing's plugin names, and the task detector with its training and
# evaluation (gateway.detect: the detector benchmark). Each is a package's __init__ or one module.
PUBLIC_SURFACES = ("gateway.flow", "gateway.autoscaling", "gateway.parity", "gateway.routing.registry")
PUBLIC_ROOMS = ("gateway.detect",)


def test_load_tests_use_only_the_gateways_public_surfaces():
    assert _violations("loadtests", lambda src, dst: not _within(dst, "gateway")
                       or dst in PUBLIC_SURFACES or _within(dst, *PUBLIC_ROOMS)) == []


def _module_graph(package: str) -> dict[str, set[str]]:
    """Every module's project imports, each import also reaching the packages it passes through
    (importing ``a.b.c`` runs ``a.b``'s ``__init__`` first)."""
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
               for p in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for src, dst, _ in _imports(package):
        parts = dst.split(".")
        for i in range(1, len(parts) + 1):
            target = ".".join(parts[:i])
            if target in modules and target != src and not _within(src, target):
                graph[src].add(target)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_gateway_has_no_import_circle():
    """Type-only imports count: a circle drawn only under TYPE_CHECKING is still one the reader follows."""
    assert _circles(_module_graph("gateway")) == []


def test_no_package_imports_the_load_tests_but_the_command_shell():
    offenders = [v for package in ("gateway", "serving", "quantize") for v in _violations(
        package, lambda src, dst: not _within(dst, "loadtests") or _within(src, *COMMAND_SHELL))]
    assert offenders == []


def _reads_tests(tree: ast.AST) -> Iterator[int]:
    """Lines that build a path into tests/: ``... / "tests"``, or a "tests/..." string in code
    (docstrings, which only point there, excepted)."""
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
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


# The rooms of loadtests/ (docs/architecture.md): what each may import of the others.
LOADTEST_ROOMS = {
    "loadtests.world": (),
    "loadtests.scoring": ("loadtests.world",),
    "loadtests.launch": ("loadtests.world",),
    "loadtests.load": ("loadtests.scoring", "loadtests.world"),
    "loadtests.replay": ("loadtests.scoring", "loadtests.world", "loadtests.sections.section"),
    "loadtests.capacity": ("loadtests.capacity", "loadtests.replay", "loadtests.world", "loadtests.scoring",
                           "loadtests.sections.section"),
    "loadtests.benchmarks": ("loadtests.benchmarks", "loadtests.world", "loadtests.scoring", "loadtests.launch",
                             "loadtests.replay", "loadtests.sections.section"),
    "loadtests.real": ("loadtests.real", "loadtests.world", "loadtests.scoring", "loadtests.launch",
                       "loadtests.sections.section"),
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
