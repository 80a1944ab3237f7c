"""Where replicas come from: the config's static lists, the Kubernetes API by label selector
(EndpointSlices), or a GIE InferencePool's Ready pods (list + watch).

``ReplicaSource`` (source.py) is the one interface; ``StaticSource``, ``KubernetesSource`` and
``PoolVariantSource`` (over a ``PoolWatcher``, pool_watch.py) implement it; ``Discovery``
(resolve.py) turns a declared config into one with its replica lists filled in, and
``DiscoveryLoop`` (loop.py) keeps doing so while the gateway runs, at once when a pool changes.
"""
