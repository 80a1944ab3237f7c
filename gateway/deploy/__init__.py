"""``duet deploy render``: Kubernetes manifests, compose files, Prometheus rules and the Grafana
dashboard, all rendered from the one duet.yaml the gateway runs with."""
