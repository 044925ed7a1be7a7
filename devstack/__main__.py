"""``python -m devstack``: run the whole stack in the foreground (``make run``), invoke
one function with a sample event (the docker-less ``sam local invoke``), replay the
stream records that failed every retry (``redrive``), or check a board (``verify``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from pathlib import Path

from devstack import httpdoor, redrive
from devstack.functions import LambdaContext, load_handler
from devstack.stack import FRONT_DOOR, NotRunning, Stack, attach, serve_forever


def _stop_on_sigterm(*_: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # A SIGTERM (from a test harness or a process manager) stops as cleanly as Ctrl-C.
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    serve_forever(
        Stack(
            host=args.host,
            port=args.port,
            table_prefix=args.table_prefix,
            verbose=args.verbose,
            deliver_twice=args.deliver_twice,
            schedule_seconds=args.schedule_seconds,
            db_path=args.db_path,
            front_door=args.front_door,
            consumers_apart=True,
        )
    )
    return 0


def invoke(args: argparse.Namespace) -> int:
    """Invoke one function of the template with an event file, against the DynamoDB, topics
    and queues of a running ``make run`` (or ``AWS_ENDPOINT_URL_DYNAMODB`` and
    ``AWS_ENDPOINT_URL_SNS``)."""
    try:
        spec, _ = attach(args.table_prefix)
    except NotRunning as error:
        print(error, file=sys.stderr)
        return 2
    functions = {r.function: (r.code_dir, r.handler) for r in spec.routes()}
    functions.update({c.function: (c.code_dir, c.handler) for c in spec.stream_consumers()})
    functions.update({s.function: (s.code_dir, s.handler) for s in spec.schedules()})
    if args.function not in functions:
        print(
            f"no function {args.function} in template.yaml: {', '.join(sorted(functions))}", file=sys.stderr
        )
        return 2
    code_dir, handler = functions[args.function]
    event = json.loads(Path(args.event).read_text())
    result = load_handler(f"podium_function_{args.function}", code_dir, handler)(
        event, LambdaContext(args.function)
    )
    print(json.dumps(result, indent=2))
    return 0


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"the schedule period must be positive, not {text}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "3000")))
    parser.add_argument("--table-prefix", default=os.environ.get("TABLE_PREFIX", ""))
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument(
        "--deliver-twice",
        action="store_true",
        help="deliver every stream batch twice, as Lambda may after a retry (tests use it)",
    )
    parser.add_argument(
        "--schedule-seconds",
        type=_positive_seconds,
        default=os.environ.get("DEVSTACK_SCHEDULE_SECONDS") or None,
        metavar="N",
        help="run every schedule of the template every N seconds instead of its rate "
        "(also DEVSTACK_SCHEDULE_SECONDS; tests use it)",
    )
    parser.add_argument(
        "--db-path",
        type=Path,
        metavar="DIR",
        help="keep DynamoDB Local's data on disk in DIR (-dbPath), across restarts (make run DB_PATH=DIR)",
    )
    parser.add_argument(
        "--front-door",
        choices=httpdoor.FRONT_DOORS,
        default=os.environ.get(FRONT_DOOR, httpdoor.REST).strip().lower(),
        help="serve the template's REST API (its edge authorizer and gateway responses) or its HTTP API "
        "(HttpApi=on: payload format 1.0, tokens checked in the functions); also FRONT_DOOR",
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("run", help="run the whole stack in the foreground (the default)")
    invoke_parser = commands.add_parser("invoke", help="invoke one function with an event file")
    invoke_parser.add_argument("function", help="the function's logical id, e.g. TopFunction")
    invoke_parser.add_argument("-e", "--event", required=True, help="the event file, e.g. events/top.json")
    redrive_parser = commands.add_parser(
        "redrive", help="replay the stream records of the failure queue through their consumer"
    )
    redrive_parser.add_argument("--table-prefix", default=argparse.SUPPRESS, help="the local stack's")
    redrive.add_arguments(redrive_parser)
    from devstack import verify  # a board's checker (``make verify``)

    verify.add_parser(commands)
    args = parser.parse_args(argv)
    if args.command == "verify":
        return verify.verify(args)
    if args.command == "redrive":
        return redrive.main(args)
    return invoke(args) if args.command == "invoke" else run(args)


if __name__ == "__main__":
    sys.exit(main())
