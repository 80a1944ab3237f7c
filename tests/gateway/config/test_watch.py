import asyncio
from pathlib import Path

import yaml

from gateway.config.watch import ConfigWatcher

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"


async def wait_for(predicate, timeout=5.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def test_file_change_applies_valid_config_and_refuses_invalid(tmp_path):
    path = tmp_path / "duet.yaml"
    path.write_text(DEMO.read_text())
    applied = []

    async def apply(config):
        applied.append(config)

    async def scenario():
        watcher = ConfigWatcher(path, apply, interval_s=0.05)
        watcher.start()
        raw = yaml.safe_load(DEMO.read_text())
        raw["models"]["smollm2"]["variants"]["fast"]["allowed_tasks"] = ["chat"]
        path.write_text(yaml.safe_dump(raw))
        await wait_for(lambda: len(applied) == 1)
        assert applied[0].models["smollm2"].variants["fast"].allowed_tasks == frozenset({"chat"})
        path.write_text("models: {broken: ")
        await wait_for(lambda: watcher.rejected == 1)
        assert len(applied) == 1
        await watcher.stop()

    asyncio.run(scenario())
