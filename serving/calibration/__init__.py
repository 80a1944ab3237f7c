"""Measuring a running replica's speed: the gateway's ``speed:`` prior from this machine.

``probe`` talks HTTP to one OpenAI-compatible replica (vLLM or ``duet sim``) and returns raw
samples; ``fit`` turns them into the step model's terms (``gateway.speed.SpeedPrior``), pure
and testable on synthetic samples. ``duet calibrate`` and ``duet up`` compose the two.
"""
