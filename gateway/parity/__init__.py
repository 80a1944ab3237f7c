"""Online parity: live requests served by a high-speed variant are checked against the standard
(shadow checks), each (variant, task type) keeps a sequential test on the paired outcomes, and a
verdict moves the running policy (docs/parity.md, "Online")."""
