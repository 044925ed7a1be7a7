"""``python -m planner``: the same as ``podium plan`` (cli/podium_cli/plan.py), kept for
the commands written before the CLI.

Example: python -m planner --writes 5000 --reads 20000 --members 1000000 --k 100
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from podium_cli.app import run

    return run(["plan", *(sys.argv[1:] if argv is None else argv)], prog_name="python -m planner")


if __name__ == "__main__":
    sys.exit(main())
