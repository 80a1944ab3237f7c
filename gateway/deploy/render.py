"""Render a target from a duet.yaml into files: relative path -> text.

    k8s-gpu | k8s-cpu   base/ (gateway, RBAC, monitoring, dashboard) + overlays/<device>/
                        (+ prometheus-adapter-values.yaml when a variant scales on an HPA)
    gie[-gpu | -cpu]    gie/: InferencePools, the picker (duet epp), the HTTPRoute, the vLLM
                        Deployments and their autoscaling (gie.py) (+ the adapter's values)
    compose-gpu | -cpu  compose.yaml, duet.yaml, prometheus/, grafana/ (fixed replica counts)

``repo_files`` renders what the repository commits under deploy/ from its example configs; a
test checks the committed files are exactly that, so they never drift from the configs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gateway.deploy.autoscaling import ADAPTER_CHART, adapter_values
from gateway.deploy.compose import compose_file, grafana_provisioning, prometheus_config
from gateway.deploy.dashboard import dashboard
from gateway.deploy.gateway_config import deployed_config
from gateway.deploy.gie import gie_files
from gateway.deploy.k8s_base import base_files
from gateway.deploy.k8s_overlay import overlay_files
from gateway.deploy.plan import load_plan, target_for
from gateway.deploy.rules import rule_groups

GATEWAY_IMAGE = "duet-gateway:0.1.0"
GPU_EXAMPLE = "deploy/render/h100-70b.yaml"
CPU_EXAMPLE = "deploy/config/demo.yaml"
# The GPU example autoscales with HPAs; rendered again with KEDA into this overlay.
KEDA_OVERLAY = "deploy/k8s/overlays/gpu-keda"
ADAPTER_VALUES = "prometheus-adapter-values.yaml"
ADAPTER_HEADER = (f"# Rendered by duet deploy render (gateway/deploy/autoscaling.py): Helm values for {ADAPTER_CHART},\n"
                  "# which serves duet_desired_replicas to the variants' HPAs as an External metric. Not a kustomize\n"
                  "# resource; install it beside kube-prometheus-stack:\n"
                  f"#   helm install prometheus-adapter {ADAPTER_CHART} -n monitoring -f {ADAPTER_VALUES}\n")


class _Dumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML ships no types here
    """Multi-line strings (PromQL) as literal blocks, so the rules read as written; no anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def to_yaml(objects: list[dict[str, Any]] | dict[str, Any]) -> str:
    documents = objects if isinstance(objects, list) else [objects]
    text: str = yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, width=120, default_flow_style=False)
    return text


def dashboard_json() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


def rules_yaml() -> str:
    return "# Rendered by duet deploy render (gateway/deploy/rules.py).\n" + to_yaml({"groups": rule_groups()})


def render(config_path: str | Path, target_name: str, *, gateway_image: str = GATEWAY_IMAGE,
           redis_url: str | None = None, autoscaler: str | None = None, gateway_name: str | None = None) -> dict[str, str]:
    """Every file of ``target_name`` for the config at ``config_path``; ``autoscaler`` (hpa | keda)
    replaces every autoscaled model's choice; ``gateway_name``: the Gateway a gie HTTPRoute
    attaches to. Raises ConfigError."""
    target = target_for(target_name, config_path)
    plan = load_plan(config_path, target, autoscaler)
    config = deployed_config(plan, str(config_path))
    if target.platform == "gie":
        files = {f"gie/{name}": to_yaml(objs) for name, objs in gie_files(plan, gateway_image, redis_url, gateway_name).items()}
        files["gie/duet.yaml"] = config
        if (values := adapter_values(plan)) is not None:
            files[f"gie/{ADAPTER_VALUES}"] = ADAPTER_HEADER + to_yaml(values)
        return files
    if target.platform == "k8s":
        overlay = f"overlays/{target.device}"
        files = {f"base/{name}": to_yaml(objs) for name, objs in base_files(gateway_image).items()}
        files["base/duet.json"] = dashboard_json()
        files |= {f"{overlay}/{name}": to_yaml(objs) for name, objs in overlay_files(plan, redis_url).items()}
        files[f"{overlay}/duet.yaml"] = config
        if (values := adapter_values(plan)) is not None:
            files[f"{overlay}/{ADAPTER_VALUES}"] = ADAPTER_HEADER + to_yaml(values)
        return files
    files = {"compose.yaml": to_yaml(compose_file(plan, gateway_image)), "duet.yaml": config,
             "prometheus/prometheus.yml": to_yaml(prometheus_config(plan)), "prometheus/rules.yml": rules_yaml(),
             "grafana/dashboards/duet.json": dashboard_json()}
    return files | {path: to_yaml(body) for path, body in grafana_provisioning().items()}


def repo_files(root: Path) -> dict[str, str]:
    """What deploy/ commits, rendered from the example configs (paths relative to ``root``)."""
    examples = {"gpu": GPU_EXAMPLE, "cpu": CPU_EXAMPLE}
    files: dict[str, str] = {}
    for device, config in examples.items():
        files |= {f"deploy/k8s/{p}": text for p, text in render(root / config, f"k8s-{device}").items()}
        files |= {f"deploy/compose/{device}/{p}": text for p, text in render(root / config, f"compose-{device}").items()}
    keda = render(root / GPU_EXAMPLE, "k8s-gpu", autoscaler="keda")
    files |= {f"{KEDA_OVERLAY}/{p.removeprefix('overlays/gpu/')}": text for p, text in keda.items()
              if p.startswith("overlays/gpu/")}
    files |= {f"deploy/{p}": text for p, text in render(root / GPU_EXAMPLE, "gie").items()}  # deploy/gie/
    files["deploy/grafana/duet.json"] = dashboard_json()
    files["deploy/prometheus/rules.yml"] = rules_yaml()
    return {path: text.replace(str(root) + "/", "") for path, text in files.items()}


def write(files: Mapping[str, str], out: Path) -> None:
    for relative, text in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
