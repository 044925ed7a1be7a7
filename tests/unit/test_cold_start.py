"""What a cold start loads: every handler imported as Lambda does it, in a fresh process.

No timing here (``python -m bench.coldstart`` measures); only what a user can check
by looking at ``sys.modules`` and the objects the import left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = sorted(path.parent for path in (ROOT / "functions").glob("*/app.py"))

IMPORT_EVERY_HANDLER = """
import gc, json, sys
import botocore.client, botocore.session

for directory in sys.argv[1:]:
    sys.path.insert(0, directory)
    import app
    assert callable(app.lambda_handler), directory
    del sys.modules["app"]
    sys.path.remove(directory)

objects = gc.get_objects()
print(json.dumps({
    "clients": sum(isinstance(o, botocore.client.BaseClient) for o in objects),
    "sessions": sum(isinstance(o, botocore.session.Session) for o in objects),
    "modules": sorted(sys.modules),
}))
"""


@pytest.fixture(scope="module")
def loaded() -> dict[str, Any]:
    """What importing every handler, as Lambda does it, left in one fresh process."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "layers" / "podium"),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "TABLE_NAME": "podium-test",
        "POWERTOOLS_SERVICE_NAME": "podium",
    }
    done = subprocess.run(
        [sys.executable, "-B", "-c", IMPORT_EVERY_HANDLER, *map(str, FUNCTIONS)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_importing_the_handlers_creates_no_aws_client_or_session(loaded: dict[str, Any]) -> None:
    # Given every function's handler module, each imported the way Lambda does it
    assert len(FUNCTIONS) > 10
    # Then clients and sessions wait for the first request that needs them
    assert loaded["clients"] == 0
    assert loaded["sessions"] == 0


def test_importing_the_handlers_loads_neither_pydantic_nor_the_xray_sdk(loaded: dict[str, Any]) -> None:
    # Given every function's handler module, each imported the way Lambda does it
    # (Tracing is on in the template; Powertools' Tracer is not used)
    # When we look at what the imports loaded
    modules = loaded["modules"]
    # Then neither pydantic nor the X-Ray SDK is among them
    assert not [name for name in modules if name.split(".")[0] in {"pydantic", "aws_xray_sdk"}]


def test_importing_the_handlers_leaves_out_powertools_event_handler(loaded: dict[str, Any]) -> None:
    # Given every function's handler module, each imported the way Lambda does it
    # When we look at what the imports loaded
    modules = loaded["modules"]
    # Then podium.http's resolver served the routes: the package's __init__, which
    # imports every resolver and event data class, never ran
    assert "aws_lambda_powertools.event_handler" not in modules


def test_importing_the_handlers_leaves_out_powertools_idempotency(loaded: dict[str, Any]) -> None:
    # Given every function's handler module, each imported the way Lambda does it
    # When we look at what the imports loaded
    modules = loaded["modules"]
    # Then Powertools idempotency is not among them (Idempotency-Key records are the layer's)
    assert "aws_lambda_powertools.utilities.idempotency" not in modules
