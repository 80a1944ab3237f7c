"""The simulated replica as a running process: the raw ASGI app and its routes (``app``, ``asgi``),
chat and completions served through the engine (``completions``) and other dialects through chat
(``over_chat``), the engine driven in real time (``runtime``), failure injection (``faults``),
``/metrics`` in vLLM's families (``metrics``, ``vllm_metrics``), the command line (``cli``, run by
``duet sim`` and ``python -m serving.sim``) and the test helper that starts one (``testing.SimProcess``).

May import every other room of the simulator; none of them imports this one."""
