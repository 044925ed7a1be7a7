"""Cold start: what importing each function's handler costs, next to a bare ``import boto3``.

Lambda imports ``app`` from the function's directory with the layer on ``sys.path``, and
the first request builds the rooms of the domain the route uses (``first_request``),
from files it cannot write to, so whatever ships as source alone is compiled at every
cold start and nothing it compiles is kept. The runtime's own boto3 comes compiled. Each
function and the layer are staged in a temporary directory like ``/var/task`` and
``/opt/python``, and a fresh ``python -B`` times ``import app`` there (the handler
attribute must exist), while boto3 comes compiled from the venv. The bare ``import boto3``
runs in the same kind of process, and the runs are interleaved in a shuffled order, so the
machine's noise hits every target alike.

What is staged (``--layout``):

- ``build``: what ``sam build`` wrote to ``.aws-sam/build``, as it is deployed: the
  layer with its ``.pyc`` (layers/podium/Makefile), the functions as source;
- ``source``: the repository's source, the layer being ``podium`` and the layer's
  requirements as installed in this venv, no ``.pyc`` anywhere;
- ``auto`` (the default): ``build`` if ``.aws-sam/build`` holds the layer and every
  function and is newer than their sources, else ``source``.

    python -m bench.coldstart [--repeats 15] [--bytecode] [--layout auto|build|source] [--only aggregator ...]

``--bytecode`` compiles whatever staged source has no ``.pyc`` yet (hash-checked), to show
what shipping ``.pyc`` for it would save.

A function that hands cursors out (template.yaml gives it ``CURSOR_SECRET_ARN``) reads the
cursor key from Secrets Manager at its first cursor (``podium.cursorkeys``). It is measured
twice: ``<name>`` as above, and ``<name>+key``, the same and then that first read: a boto3
client for Secrets Manager made and one ``GetSecretValue`` answered by a stub on this
machine (``SecretStub``). The DynamoDB client, which every first request makes whether or
not it reads the key, is made between the two timed parts and not counted (it builds the
default boto3 session the key's client then shares). The stub answers in well under a
millisecond; the round trip to Secrets Manager in the function's region is not in the figure.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import py_compile
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS = ROOT / "functions"
LAYER = ROOT / "layers" / "podium"
TEMPLATE = ROOT / "template.yaml"
SAM_BUILD = ROOT / ".aws-sam" / "build"
LAYER_ID = "PodiumLayer"
BOTO3 = "boto3"

# What Lambda and template.yaml's Globals put in the environment (the values are made up).
LAMBDA_ENVIRONMENT = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
    "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
    "_HANDLER": "app.lambda_handler",
    "TABLE_NAME": "podium-dev-LeaderboardTable",
    "NOTIFICATION_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:podium-dev-notifications",
    "RANK_INDEX_NAME": "RankIndex",
    "SNAPSHOT_RETENTION_DAYS": "90",
    "POWERTOOLS_SERVICE_NAME": "podium",
    "POWERTOOLS_LOG_LEVEL": "INFO",
    "POWERTOOLS_METRICS_NAMESPACE": "Podium",
}

# Run in the measured process: the import's own time, without the interpreter's start.
TIMED_IMPORT = """
import time
started = time.perf_counter()
{statement}
print(time.perf_counter() - started)
"""

# Modules a handler's import is better without; the table says which ones it loaded.
HEAVY_MODULES = (
    "pydantic",
    "aws_xray_sdk",
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.utilities.batch",
    "aws_lambda_powertools.utilities.idempotency",
)

# Run once per function, untimed: what the import left behind.
INSPECT_IMPORT = """
import gc, json, sys
import app
app.lambda_handler
import botocore.client, botocore.session
objects = gc.get_objects()
print(json.dumps({{
    "clients": sum(isinstance(o, botocore.client.BaseClient) for o in objects),
    "sessions": sum(isinstance(o, botocore.session.Session) for o in objects),
    "heavy": [m for m in {heavy!r} if m in sys.modules],
}}))
"""


# A ``+key`` target: the cold start as above, then the first cursor's key read, timed apart
# from the DynamoDB client the first request makes anyway.
KEYED_IMPORT = """
import time
started = time.perf_counter()
{statement}
elapsed = time.perf_counter() - started
import boto3
boto3.client("dynamodb")
started = time.perf_counter()
from podium import cursorkeys
cursorkeys.source().ring()
print(elapsed + time.perf_counter() - started)
"""
KEY_SUFFIX = "+key"
SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:podium-dev-CursorKey-AbCdEf"  # noqa: S105 - made up


class SecretStub:
    """Secrets Manager's GetSecretValue answered on 127.0.0.1, for the ``+key`` targets."""

    def __init__(self) -> None:
        import http.server
        import threading

        body = json.dumps(
            {
                "ARN": SECRET_ARN,
                "Name": "podium-dev-CursorKey",
                "VersionId": "00000000-0000-0000-0000-000000000001",
                "SecretString": json.dumps({"currentId": "1", "current": "k" * 48}),
                "VersionStages": ["AWSCURRENT"],
                "CreatedDate": 1.7e9,
            }
        ).encode()

        class Answer(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def environment(self) -> dict[str, str]:
        """What a function given the secret has (Lambda gives every function credentials)."""
        return {
            "CURSOR_SECRET_ARN": SECRET_ARN,
            "AWS_ENDPOINT_URL_SECRETS_MANAGER": self.url,
            "AWS_ACCESS_KEY_ID": "ASIAEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "example",
            "AWS_SESSION_TOKEN": "example",
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def cursor_functions() -> set[str]:
    """The functions template.yaml gives the cursor key's secret, by source directory."""
    from devstack.template import load

    return {
        Path(resource["Properties"]["CodeUri"]).name
        for resource in load(TEMPLATE)["Resources"].values()
        if resource.get("Type") == "AWS::Serverless::Function"
        and "CURSOR_SECRET_ARN" in resource["Properties"].get("Environment", {}).get("Variables", {})
    }


def function_names() -> list[str]:
    return sorted(path.parent.name for path in FUNCTIONS.glob("*/app.py"))


def layer_distributions() -> list[metadata.Distribution]:
    """The layer's requirements and everything they need (no extras), as installed here."""
    from packaging.requirements import Requirement

    wanted = [
        Requirement(line).name
        for line in (LAYER / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    found: dict[str, metadata.Distribution] = {}
    while wanted:
        name = wanted.pop()
        if name.lower() in found:
            continue
        distribution = metadata.distribution(name)
        found[name.lower()] = distribution
        for text in distribution.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                wanted.append(requirement.name)
    return list(found.values())


def built_functions() -> dict[str, Path]:
    """Each function's directory in ``sam build``'s output, by the name of its source directory."""
    from devstack.template import load

    built = {}
    for logical_id, resource in load(TEMPLATE)["Resources"].items():
        code_uri = resource.get("Properties", {}).get("CodeUri")
        if resource.get("Type") == "AWS::Serverless::Function" and isinstance(code_uri, str):
            built[Path(code_uri).name] = SAM_BUILD / logical_id
    return built


def build_is_current() -> bool:
    """``sam build``'s output holds the layer and every function, and no source is newer."""
    built = built_functions()
    layer = SAM_BUILD / LAYER_ID / "python"
    if not layer.is_dir() or any(not built.get(name, SAM_BUILD / "-").is_dir() for name in function_names()):
        return False
    sources = [*LAYER.rglob("*.py"), LAYER / "requirements.txt", LAYER / "Makefile", TEMPLATE]
    sources += FUNCTIONS.rglob("*.py")
    newest = max(path.stat().st_mtime for path in sources if path.exists())
    return newest <= (SAM_BUILD.parent / "build.toml").stat().st_mtime


def choose_layout(layout: str) -> str:
    if layout == "auto":
        return "build" if build_is_current() else "source"
    if layout == "build" and not build_is_current():
        raise SystemExit(f"{SAM_BUILD} is missing or older than the source: run `make build` first")
    return layout


def stage_build(into: Path, bytecode: bool) -> Path:
    """The same layout as ``stage``, copied from ``sam build``'s output."""
    layer = into / "opt" / "python"
    shutil.copytree(SAM_BUILD / LAYER_ID / "python", layer)
    built = built_functions()
    for name in function_names():
        shutil.copytree(built[name], into / "task" / name)
    if bytecode:
        # The layer is built compiled; compileall would replace its .pyc with its own kind.
        compileall.compile_dir(
            into / "task", quiet=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
        )
    return layer


def stage(into: Path, bytecode: bool, layout: str = "source") -> Path:
    """``into/opt/python`` as the layer, ``into/task/<name>`` as each function; returns ``opt/python``."""
    if layout == "build":
        return stage_build(into, bytecode)
    layer = into / "opt" / "python"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(LAYER / "podium", layer / "podium", ignore=ignore)
    for distribution in layer_distributions():
        for file in distribution.files or []:
            top = file.parts[0]
            if top.endswith((".dist-info", ".data")) or top == ".." or "__pycache__" in file.parts:
                continue
            target = layer / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(str(file.locate())), target)
    for name in function_names():
        shutil.copytree(FUNCTIONS / name, into / "task" / name, ignore=ignore)
    if bytecode:
        # Hash-checked, as a zip's timestamps would make timestamp-checked .pyc stale.
        compileall.compile_dir(into, quiet=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    return layer


ROOM = re.compile(r"services\(\)\.(\w+)|\b(notifier)\(\)")


def first_request(name: str) -> str:
    """What a cold start of the function runs before its first request reaches the
    database: the handler's import, and the rooms of the domain its route builds on first
    use (``podium.wiring``: each imports its modules then), found in the handler's source."""
    source = (FUNCTIONS / name / "app.py").read_text()
    rooms = sorted({room or "notifier" for room, notifier in ROOM.findall(source) if room or notifier})
    built = [f"wiring.services().{room}" if room != "notifier" else "wiring.notifier()" for room in rooms]
    touch = "\nfrom podium import wiring\n" + "\n".join(built) if built else ""
    return "import app\napp.lambda_handler" + touch


def environment(layer: Path, task: Path) -> dict[str, str]:
    keep = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "POWERTOOLS_"))}
    keep.pop("PYTHONPATH", None)
    return {
        **keep,
        **LAMBDA_ENVIRONMENT,
        "PYTHONPATH": f"{task}{os.pathsep}{layer}",
        "LAMBDA_TASK_ROOT": str(task),
    }


def run(code: str, cwd: Path, env: dict[str, str]) -> str:
    # -B: /var/task and /opt are read-only on Lambda, so nothing compiled is ever kept.
    done = subprocess.run(  # noqa: S603 - this interpreter, fixed code
        [sys.executable, "-B", "-c", code], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"importing in {cwd} failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def measure(
    repeats: int = 15, bytecode: bool = False, layout: str = "auto", only: list[str] | None = None
) -> dict[str, Any]:
    """Median (and fastest) import time in seconds of ``import boto3`` and of each function's
    ``app``, the ratio of each to boto3's, the largest ratio, and what each import left behind.
    ``layout`` is ``auto``, ``build`` or ``source`` (see the module's docstring); ``only``
    names the functions to measure (all of them by default)."""
    layout = choose_layout(layout)
    with tempfile.TemporaryDirectory(prefix="podium-coldstart-") as scratch:
        root = Path(scratch)
        layer = stage(root, bytecode, layout)
        functions = [name for name in function_names() if not only or name in only]
        keyed = [f"{name}{KEY_SUFFIX}" for name in functions if name in cursor_functions()]
        names = sorted([*functions, *keyed])
        targets = [BOTO3, *names]
        stub = SecretStub()
        envs = {name: environment(layer, root / "task" / name) for name in functions}
        envs.update({name: {**envs[_base(name)], **stub.environment()} for name in keyed})
        envs[BOTO3] = environment(layer, root / "task")
        statements = {name: first_request(name) for name in functions}
        statements.update({name: first_request(_base(name)) for name in keyed})
        statements[BOTO3] = "import boto3"
        cwd = {name: root / "task" / _base(name) for name in names}
        cwd[BOTO3] = root / "task"

        def timed(target: str) -> str:
            return (KEYED_IMPORT if target in keyed else TIMED_IMPORT).format(statement=statements[target])

        for target in targets:  # warm the OS's file cache; not counted
            run(timed(target), cwd[target], envs[target])
        samples: dict[str, list[float]] = {target: [] for target in targets}
        for _ in range(repeats):
            order = random.sample(targets, len(targets))
            for target in order:
                samples[target].append(float(run(timed(target), cwd[target], envs[target])))
        left_behind = {
            name: json.loads(run(INSPECT_IMPORT.format(heavy=HEAVY_MODULES), cwd[name], envs[name]))
            for name in names
        }
        stub.close()

    # Medians, and the fastest runs too: load from other processes only ever adds time, so
    # on a busy machine the minimum is the estimate it disturbs least (timeit's advice).
    medians = {target: statistics.median(values) for target, values in samples.items()}
    fastest = {target: min(values) for target, values in samples.items()}
    ratios = {name: medians[name] / medians[BOTO3] for name in names}
    fastest_ratios = {name: fastest[name] / fastest[BOTO3] for name in names}
    return {
        "python": sys.version.split()[0],
        "repeats": repeats,
        "bytecode": bytecode,
        "layout": layout,
        "boto3_seconds": medians[BOTO3],
        "boto3_fastest_seconds": fastest[BOTO3],
        "boto3_slowest_seconds": max(samples[BOTO3]),
        "handlers": {
            name: {
                "seconds": medians[name],
                "ratio": ratios[name],
                "fastest_seconds": fastest[name],
                "fastest_ratio": fastest_ratios[name],
                **left_behind[name],
            }
            for name in names
        },
        "max_ratio": max(ratios.values()),
        "max_ratio_handler": max(ratios, key=lambda name: ratios[name]),
        "max_fastest_ratio": max(fastest_ratios.values()),
    }


def _base(target: str) -> str:
    """The function a target measures (``top+key``: ``top``)."""
    return target.removesuffix(KEY_SUFFIX)


def table(result: dict[str, Any]) -> str:
    if result.get("layout") == "build":
        staged = "`sam build` output: layer with its .pyc, functions " + (
            "compiled here" if result["bytecode"] else "as source"
        )
    else:
        staged = f"source, {'with' if result['bytecode'] else 'without'} .pyc for the function and layer"
    lines = [
        f"Python {result['python']}, {result['repeats']} fresh processes each, {staged}",
        "",
        "| import | median ms | x boto3 | fastest ms | x boto3 | clients | sessions | heavy modules |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
        f"| `boto3` (bare) | {result['boto3_seconds'] * 1000:.0f} | 1.00 "
        f"| {result['boto3_fastest_seconds'] * 1000:.0f} | 1.00 | | | |",
    ]
    for name, row in result["handlers"].items():
        heavy = ", ".join(m.rsplit(".", 1)[-1] for m in row["heavy"]) or "none"
        lines.append(
            f"| `{name}` | {row['seconds'] * 1000:.0f} | {row['ratio']:.2f} "
            f"| {row['fastest_seconds'] * 1000:.0f} | {row['fastest_ratio']:.2f} "
            f"| {row['clients']} | {row['sessions']} | {heavy} |"
        )
    lines += [
        "",
        f"Largest: {result['max_ratio']:.2f} x boto3 by medians ({result['max_ratio_handler']}), "
        f"{result['max_fastest_ratio']:.2f} x by fastest runs",
    ]
    if "boto3_slowest_seconds" in result:
        lines += [
            "",
            f"The bare `import boto3` took from {result['boto3_fastest_seconds'] * 1000:.0f} to "
            f"{result['boto3_slowest_seconds'] * 1000:.0f} ms over its {result['repeats']} runs.",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--bytecode", action="store_true", help="compile the staged source that has no .pyc first"
    )
    parser.add_argument(
        "--layout",
        choices=("auto", "build", "source"),
        default="auto",
        help="stage sam build's output, the source, or the build if it is current (the default)",
    )
    parser.add_argument("--only", nargs="+", metavar="FUNCTION", help="measure these functions alone")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    args = parser.parse_args()
    result = measure(args.repeats, args.bytecode, args.layout, args.only)
    print(json.dumps(result, indent=2) if args.json else table(result))


if __name__ == "__main__":
    main()
