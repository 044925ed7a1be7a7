"""Local servers run as child processes: started on a free port, stopped by PID."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Self


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
class LocalServer:
    """A server in a process group of its own, listening on 127.0.0.1:``port``."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    def launch(
        cls,
        command: Callable[[int], list[str]],
        *,
        what: str,
        port: int | None = None,
        log_path: Path | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> Self:
        """Run ``command(port)`` until it listens; never assume a port is free: when the
        chosen one is taken between the check and the bind, try another."""
        for _ in range(5):
            chosen = port or free_port()
            if log_path:
                log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
            process = subprocess.Popen(
                command(chosen),
                cwd=cwd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            server = cls(process, chosen)
            try:
                wait_for_port(chosen, timeout=timeout, process=process)
            except RuntimeError:
                if port is not None:
                    raise
                continue
            except TimeoutError:
                server.stop()
                raise
            return server
        raise RuntimeError(f"{what} did not start on any of five free ports")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
