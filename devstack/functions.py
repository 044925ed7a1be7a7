"""Load the functions' handlers exactly as ``template.yaml`` deploys them: each
``CodeUri/app.py`` as its own module, with the shared layer importable."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LAYER = ROOT / "layers" / "podium"

Handler = Callable[[dict[str, Any], Any], Any]


def use_layer() -> None:
    if str(LAYER) not in sys.path:
        sys.path.insert(0, str(LAYER))


def load_handler(module_name: str, code_dir: Path, handler: str) -> Handler:
    """Import ``code_dir/<module>.py`` as ``module_name`` and return its handler."""
    use_layer()
    file_name, attribute = handler.rsplit(".", 1)
    spec = importlib.util.spec_from_file_location(module_name, code_dir / f"{file_name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {handler} from {code_dir}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    handler_function: Handler = getattr(module, attribute)
    return handler_function


class FunctionPool:
    """Execution environments of one function, as Lambda keeps them: each instance
    serves one invocation at a time, and a new one starts when all are busy."""

    def __init__(self, function: str, code_dir: Path, handler: str) -> None:
        self.function = function
        self.code_dir = code_dir
        self.handler = handler
        self._lock = threading.Lock()
        self._idle: list[Handler] = []
        self._started = 0

    def _acquire(self) -> Handler:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            self._started += 1
            name = f"podium_function_{self.function}_{self._started}"
        return load_handler(name, self.code_dir, self.handler)

    def invoke(self, event: dict[str, Any]) -> Any:
        handler = self._acquire()
        try:
            return handler(event, LambdaContext(self.function))
        finally:
            with self._lock:
                self._idle.append(handler)


@dataclass
class LambdaContext:
    """What the Lambda runtime passes as ``context``; Powertools reads these fields."""

    function_name: str
    memory_limit_in_mb: int = 512
    timeout_seconds: float = 29.0
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = "local"
    function_version: str = "$LATEST"
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        elapsed = time.monotonic() - self._started
        return max(0, int((self.timeout_seconds - elapsed) * 1000))
