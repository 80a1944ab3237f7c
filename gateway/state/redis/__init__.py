"""What the gateways share through Redis: the link (``link.py``: one connection, its scripts and
its failure state), the replica store (``store.py`` with ``scripts.py``), the answer lengths
(``lengths.py``), autoscaling's demand (``demand.py``), the prefix index (``prefix_index.py``),
and the one background flush that the stream-shared copies use (``flush.py``: the prefix index
here, the sessions' seats in ``gateway.sessions.shared``). Each is the Redis form of a store in
``gateway.state`` with the same interface."""
