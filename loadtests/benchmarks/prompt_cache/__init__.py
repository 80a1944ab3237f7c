"""The prompt-cache section: prefix-aware routing in the replay and on real replicas."""
