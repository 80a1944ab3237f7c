"""make bench-variants: every real CPU variant's start, speed and TTFT."""
