"""Sweeps to the knee (``duet replay --sweep``/``--sweep-search``): each policy replayed on each seed's
window at every load (``run.py``), the load where the good share crosses a level (``knee.py``) or
bisected against constraint sets (``search.py``, ``sla.py``), the results file (``results.py``), its
section and plots (``render.py``), and a replay's lost requests explained (``diagnose.py``).
Imports replay, world and workload."""
