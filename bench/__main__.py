"""``python -m bench [--quick] [--report-only | --coldstart-only | --probe-only | --worst-only |
--grown-only | --hot-only | --churn-only]``: see docs/benchmarks.md."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from datetime import UTC, datetime

from bench import report
from bench.run import (
    Plan,
    measure_churn,
    measure_cold_start,
    measure_grown,
    measure_hot,
    measure_probes,
    measure_worst,
    run,
)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run of about 2 minutes")
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the page and plots from the last results.json"
    )
    parser.add_argument(
        "--coldstart-only",
        action="store_true",
        help="measure cold start again into the last results.json, then rewrite the page",
    )
    parser.add_argument(
        "--probe-only",
        action="store_true",
        help="send one request of each kind again (What DynamoDB Local reports), then rewrite the page",
    )
    parser.add_argument(
        "--worst-only",
        action="store_true",
        help="measure the worst case of every route again (bench/worst.py), then rewrite the page",
    )
    parser.add_argument(
        "--grown-only",
        action="store_true",
        help="grow a board through the API and read it under writers again (bench/grown.py), then rewrite",
    )
    parser.add_argument(
        "--hot-only",
        action="store_true",
        help="read one board from many instances at once again (bench/hot.py), then rewrite the page",
    )
    parser.add_argument(
        "--churn-only",
        action="store_true",
        help="read top-k while scores change again (bench/churn.py: the head's lag), then rewrite the page",
    )
    args = parser.parse_args()
    # On SIGTERM, unwind like Ctrl-C, so that DynamoDB Local and redis-server are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    plan = Plan.from_environment(args.quick)
    started = time.perf_counter()
    again = (
        args.coldstart_only,
        args.probe_only,
        args.worst_only,
        args.grown_only,
        args.hot_only,
        args.churn_only,
    )
    if args.report_only or any(again):
        results = json.loads((plan.data / "results.json").read_text())
        parts = ("coldstart", "probe", "worst", "grown", "hot", "churn")
        now = datetime.now(UTC).isoformat(timespec="seconds")
        measured = {part: now for part, on in zip(parts, again, strict=True) if on}
        results.setdefault("measuredAgain", {}).update(measured)
        if args.probe_only:
            results["probes"] = measure_probes(plan.data)
            (plan.data / "results.json").write_text(json.dumps(results, indent=1))
        if args.worst_only:
            results["worst"] = measure_worst(plan.worst_plan, plan.data)
            (plan.data / "results.json").write_text(json.dumps(results, indent=1))
        if args.grown_only:
            results["grown"] = measure_grown(plan)
            (plan.data / "results.json").write_text(json.dumps(results, indent=1))
        if args.churn_only:
            results["churn"] = measure_churn(plan)
            (plan.data / "results.json").write_text(json.dumps(results, indent=1))
        if args.hot_only:
            results["hot"] = measure_hot(plan)
            (plan.data / "results.json").write_text(json.dumps(results, indent=1))
        if args.coldstart_only:
            results["coldStart"] = measure_cold_start()
            results["notes"] = [n for n in results["notes"] if not n.startswith("Cold start not measured")]
            (plan.data / "results.json").write_text(json.dumps(results, indent=1))
    else:
        results = run(plan)
    print(report.console(results))
    page = report.write(results, plan.out)
    print(f"wrote {page} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
