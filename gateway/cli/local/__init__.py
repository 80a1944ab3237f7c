"""The commands of a local deployment: `duet up` starts replicas and the gateway (up.py) with
the variants this machine has evidence for (evidence.py), and `duet demo` shows them serving
(demo.py)."""
