"""The engine model: vLLM's continuous-batching scheduler in virtual time, with no I/O and no clock of
its own (``engine.Engine``: submit, next_event_time, advance), and its parts: the requests and
events it speaks (``events``), a request's progress (``sequence``), what each step computes
(``scheduler``), the paged KV and prefix cache (``kvcache``), the waiting order
(``scheduling_order``), a step's cost (``stepcost``) and decode runs planned at once
(``decoderun``).

May import: ``serving.sim.profile`` and this room. Never the other rooms (dialects, answers,
server, fidelity): the replay and the benchmarks run it alone."""
