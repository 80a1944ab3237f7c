"""What the gateway runs never loads the detector's training room (``gateway.detect.training``):
the corpus generators, the fit and the evaluation stay out of every gateway process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TRAINING = "gateway.detect.training"


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return set(out.stdout.split())


def test_starting_the_gateways_runtime_and_app_imports_nothing_of_the_training_room():
    loaded = _loaded_after("import gateway.runtime, gateway.api.app\n"
                           "from gateway.detect import TaskDetector; TaskDetector.builtin()")
    assert "gateway.runtime" in loaded and "gateway.api.app" in loaded and "gateway.detect.model" in loaded
    assert sorted(m for m in loaded if m == TRAINING or m.startswith(TRAINING + ".")) == []


def test_the_check_sees_the_training_room_when_it_is_imported():
    """The probe above can fail: importing the room shows in the same listing."""
    loaded = _loaded_after("import gateway.detect.training.corpus")
    assert f"{TRAINING}.corpus" in loaded and f"{TRAINING}.templates.synth" in loaded
