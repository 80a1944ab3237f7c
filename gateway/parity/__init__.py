"""Online parity: live requests served by a high-speed variant are checked against the standard
(shadow checks), each (variant, task type) keeps a sequential test on the paired outcomes, and a
verdict moves the running policy (docs/parity.md, "Online"). Above the lifecycle: its sampling
(``sample.py``) and tap (``tap.py``) read the lifecycle's types and are wired by the runtime.

``shadow_sample`` is public for code outside ``gateway/`` (the router benchmark measures what an
unsampled request pays)."""

from gateway.parity.sample import shadow_sample

__all__ = ["shadow_sample"]
