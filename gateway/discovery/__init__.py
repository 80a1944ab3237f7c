"""Where replicas come from: the config's static lists, or the Kubernetes API by label selector.

``ReplicaSource`` (source.py) is the one interface; ``StaticSource`` and ``KubernetesSource``
implement it; ``Discovery`` (resolve.py) turns a declared config into one with its replica lists
filled in, and ``DiscoveryLoop`` (loop.py) keeps doing so while the gateway runs.
"""
