"""API keys, tiers, quotas and the usage/cost ledger: who may call the gateway, how much, and what
it cost. The hot path holds one ``Access`` object (``guard.KeyedAccess``, or ``off.OpenAccess``
when keys are off) and calls it twice per request: ``admit`` before routing, ``settle`` once the
response has ended."""
