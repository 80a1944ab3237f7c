"""make bench-sim and the H100 fidelity check: the simulator's speed and its profiles against published figures."""
