"""``python -m devstack``: run the whole stack in the foreground (``make run``)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from devstack.stack import Stack, serve_forever


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "3000")))
    parser.add_argument("--table-prefix", default=os.environ.get("TABLE_PREFIX", ""))
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # A SIGTERM (from a test harness or a process manager) stops as cleanly as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    serve_forever(Stack(host=args.host, port=args.port, table_prefix=args.table_prefix, verbose=args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
