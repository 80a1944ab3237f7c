"""A vLLM-faithful replica simulator: one process behaves like one vLLM 0.33 server.

Public API (stable; the gateway's tests depend on it):

Command line — ``duet sim`` or ``python -m serving.sim``::

    --port PORT --profile PROFILE [--served-model-name NAME] [--time-scale X] [--seed N]
    [--error-rate R] [--error-kinds 429,500,503] [--die-after-tokens N] [--hang] [--slowdown X]

Profiles (``serving/sim/profiles/*.yaml``): ``h100-70b-{bf16,fp8,w4a16,ngram,eagle3}``,
``cpu-smollm2-{bf16,int8,int4,ngram}``, ``fast-test``; ``<h100 profile>-tp{1,2,4,8}``: the TP4
profile derived at that many GPUs where it fits (``serving.sim.parallel``).

HTTP: vLLM's ``POST /v1/chat/completions``, ``POST /v1/completions``, ``GET /v1/models``,
``POST /tokenize``, ``GET /health``, ``GET /load``, ``GET /version``, ``GET /metrics``; and the
admin routes ``GET /sim/faults`` / ``POST /sim/faults`` (JSON with the fault knobs of
``serving.sim.server.faults``; only the keys given change).

Request hints: header ``x-duet-task`` (``chat``, ``coding``, ``agent``, ``long-context``,
``reasoning``, ``extraction``) or body ``vllm_xargs.duet_task`` selects speculative acceptance;
``vllm_xargs.sim_prompt_tokens`` overrides the counted prompt length;
``vllm_xargs.sim_output_tokens`` sets the natural answer length (EOS there); ``min_tokens`` /
``ignore_eos`` force the output length. Per-request faults: ``x-sim-fail: 500``,
``x-sim-die-after-tokens: 5``, ``x-sim-hang: 1``.

Metric times are the model's (virtual) seconds, so with ``--time-scale`` they stay those of
the simulated hardware while the client sees time compressed.

In Python:
    ``serving.sim.server.testing.SimProcess(profile, *args)`` — a context manager that starts
    ``python -m serving.sim`` on a free loopback port and waits for ``/health``; ``.url``,
    ``.port``, ``.kill()`` (SIGKILL), ``.stop()``.
    ``serving.sim.engine.engine.Engine(profile, seed=...)`` — the engine model alone, in virtual time:
    ``submit(SimRequest, now)``, ``next_event_time()``, ``advance(to) -> [TokensOut | Finished]``.
    ``serving.sim.parallel.load_profile(name_or_path)`` (``serving.sim.profile``'s, plus ``-tpN`` names).

Rooms (each room's ``__init__`` says what it may import; none imports ``server``):
    ``profile``, ``parallel``, ``tokens`` — what a replica is (its YAML profile, at another TP size),
    and text counted without a tokenizer;
    ``engine/`` — the engine model in virtual time, no I/O;
    ``fidelity/`` — the profiles against real hardware, and as the gateway's speed prior;
    ``dialects/`` — the APIs' request and answer shapes, as data;
    ``answers/`` — what the model writes: words, tool calls, scripted answers;
    ``server/`` — the running replica: ASGI app, endpoints, real-time runtime, faults, /metrics, CLI.
"""
