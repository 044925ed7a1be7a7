"""Turn ``results.json`` into the console table, ``benchmarks.md`` and its plots."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.measure import percentile, top_budget

Row = dict[str, Any]
VARIANT_NAMES = {
    "naive": "naive scatter-gather",
    "service": "service (consistent)",
    "head": "service (head item)",
    "redis": "Redis sorted set",
}


def _rows(results: dict[str, Any], **match: Any) -> list[Row]:
    return [row for row in results["rows"] if all(row.get(key) == value for key, value in match.items())]


def _one(results: dict[str, Any], **match: Any) -> Row | None:
    found = _rows(results, **match)
    return found[0] if found else None


def _largest(results: dict[str, Any]) -> int:
    return max((row["size"] for row in results["rows"]), default=0)


DEPTH_ORDER = (("top", 0), ("1%", 1), ("10%", 2), ("50%", 3), ("90%", 4), ("last", 5))


def _shown_sizes(results: dict[str, Any]) -> list[int]:
    """The largest size measured on every shard count, and the big board's size."""
    counts = set(results["plan"]["shards"])
    complete = [
        size
        for size in {row["size"] for row in results["rows"]}
        if counts <= {row["shards"] for row in results["rows"] if row["size"] == size}
    ]
    largest = _largest(results)
    return sorted({max(complete, default=largest), largest})


def _number(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.{digits}f}"
    return f"{int(value):,}"


def _ms(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.2f}" if value < 10 else f"{value:.0f}"


def _table(header: list[str], lines: Iterable[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return out


# -- console -------------------------------------------------------------------------------


def console(results: dict[str, Any]) -> str:
    width = [38, 7, 7, 10, 9, 9, 6, 7, 9, 9]
    header = ["pattern", "shards", "k/depth", "items", "RCU", "WCU", "reqs", "rounds", "p50 ms", "p95 ms"]
    shown = " and ".join(f"{s:,}" for s in _shown_sizes(results))
    lines = [f"Podium benchmark at {shown} members (DynamoDB Local; Redis: latency only)"]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, width, strict=True)))
    for row in results["rows"]:
        if row["size"] not in _shown_sizes(results):
            continue
        label = f"{row['pattern']} {row['variant']}"
        if row["pattern"] == "write":
            label = row["what"]
        cells = [
            label[:38],
            "-" if row["shards"] is None else str(row["shards"]),
            str(row.get("k") or row.get("depth") or ""),
            _number(row.get("itemsRead")),
            _number(row.get("rcu")),
            _number(row.get("wcu")),
            _number(row.get("requests")),
            _number(row.get("rounds")),
            _ms(row.get("p50Ms")),
            _ms(row.get("p95Ms")),
        ]
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, width, strict=True)))
    failed = [check for check in results["checks"] if not check["ok"]]
    lines.append(f"checks: {len(results['checks']) - len(failed)} passed, {len(failed)} failed")
    return "\n".join(lines)


# -- plots -------------------------------------------------------------------------------------


def plot(results: dict[str, Any], images: Path) -> list[str]:
    """The PNGs; returns their file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    images.mkdir(parents=True, exist_ok=True)
    names = []
    shards = results["plan"]["shards"]
    size = _largest(results)
    styles = {"naive": "o--", "service": "s-", "head": "^:", "redis": "x:"}
    colours = {count: f"C{i}" for i, count in enumerate(shards)}  # colour: shards; line: how

    # 1. Items read by top-k against the board's size.
    ks = [k for k in results["plan"]["ks"] if k in (100, 1000)] or results["plan"]["ks"]
    figure, axes = plt.subplots(1, len(ks), figsize=(6 * len(ks), 4.5), squeeze=False)
    for axis, k in zip(axes[0], ks, strict=True):
        for count in shards:
            for variant in ("naive", "service", "head"):
                points = sorted(
                    (row["size"], row["itemsRead"])
                    for row in _rows(results, pattern="top", variant=variant, shards=count, k=k)
                )
                if points:
                    axis.plot(
                        [p[0] for p in points],
                        [max(p[1], 0.5) for p in points],
                        styles[variant],
                        color=colours[count],
                        label=f"{VARIANT_NAMES[variant]}, {count} shards",
                    )
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_title(f"top {k}: items read per request")
        axis.set_xlabel("members on the board")
        axis.set_ylabel("items read (ScannedCount)")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7)
    figure.tight_layout()
    names.append("bench-top-items.png")
    figure.savefig(images / names[-1], dpi=110)
    plt.close(figure)

    # 2. RCU of a rank against the member's depth, at the largest size.
    depths = [d for d, _ in DEPTH_ORDER if _rows(results, pattern="rank", size=size, depth=d)]
    figure, axis = plt.subplots(figsize=(8, 4.5))
    for count in shards:
        if not _rows(results, pattern="rank", size=size, shards=count):
            continue
        for variant in ("naive", "service"):
            values = [
                (row or {}).get("rcu", math.nan)
                for row in (
                    _one(results, pattern="rank", variant=variant, size=size, shards=count, depth=d)
                    for d in depths
                )
            ]
            axis.plot(
                depths, [max(v, 0.1) for v in values], styles[variant], label=f"{variant}, {count} shards"
            )
    axis.set_yscale("log")
    axis.set_title(f"rank: RCU per request by the member's depth ({size:,} members)")
    axis.set_xlabel("the member's place in the listing")
    axis.set_ylabel("RCU (ConsumedCapacity)")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=7)
    figure.tight_layout()
    names.append("bench-rank-rcu.png")
    figure.savefig(images / names[-1], dpi=110)
    plt.close(figure)

    # 3. Latency p50/p95 at the largest size, the middle shard count, with Redis.
    middle = shards[len(shards) // 2]
    cases: list[tuple[str, Row | None]] = [
        ("top 100 naive", _one(results, pattern="top", variant="naive", size=size, shards=middle, k=100)),
        ("top 100 service", _one(results, pattern="top", variant="service", size=size, shards=middle, k=100)),
        ("top 100 head", _one(results, pattern="top", variant="head", size=size, shards=middle, k=100)),
        ("top 100 Redis", _one(results, pattern="top", variant="redis", size=size, k=100)),
        (
            "rank 50% naive",
            _one(results, pattern="rank", variant="naive", size=size, shards=middle, depth="50%"),
        ),
        (
            "rank 50% service",
            _one(results, pattern="rank", variant="service", size=size, shards=middle, depth="50%"),
        ),
        ("rank 50% Redis", _one(results, pattern="rank", variant="redis", size=size, depth="50%")),
        (
            "submit_score",
            _one(results, pattern="write", variant="submit_score", size=size, shards=middle),
        ),
    ]
    present = [(label, row) for label, row in cases if row is not None]
    figure, axis = plt.subplots(figsize=(10, 4.5))
    positions = range(len(present))
    axis.bar([p - 0.2 for p in positions], [row["p50Ms"] for _, row in present], 0.4, label="p50")
    axis.bar([p + 0.2 for p in positions], [row["p95Ms"] for _, row in present], 0.4, label="p95")
    axis.set_xticks(list(positions), [label for label, _ in present], rotation=20, ha="right", fontsize=8)
    axis.set_yscale("log")
    axis.set_ylabel("milliseconds")
    axis.set_title(f"latency on this machine: {size:,} members, {middle} shards (DynamoDB Local, Redis)")
    axis.grid(True, axis="y", which="both", alpha=0.3)
    axis.legend()
    figure.tight_layout()
    names.append("bench-latency.png")
    figure.savefig(images / names[-1], dpi=110)
    plt.close(figure)
    return names


# -- the document ------------------------------------------------------------------------------


def _capacity_section(results: dict[str, Any]) -> list[str]:
    lines = _table(
        ["request", "what", "ConsumedCapacity returned", "total", "table", "index", "ScannedCount"],
        (
            [
                f"`{p['operation']}`",
                p["what"],
                "yes" if p["returned"] else "no",
                _number(p["total"]),
                _number(p["table"]),
                _number(p["index"]),
                _number(p.get("scanned")),
            ]
            for p in results.get("probes", [])
        ),
    )
    return lines


def _top_lines(results: dict[str, Any], size: int) -> list[list[str]]:
    lines = []
    for count in results["plan"]["shards"]:
        for k in results["plan"]["ks"]:
            for variant in ("naive", "service", "head", "redis"):
                row = _one(
                    results,
                    pattern="top",
                    variant=variant,
                    size=size,
                    k=k,
                    shards=None if variant == "redis" else count,
                )
                if row is None or (variant == "redis" and count != results["plan"]["shards"][0]):
                    continue
                lines.append(
                    [
                        "-" if variant == "redis" else str(count),
                        f"{k:,}",
                        VARIANT_NAMES[variant],
                        _number(row.get("itemsRead")),
                        _number(row.get("rcu")),
                        _number(row.get("requests")),
                        _number(row.get("rounds")),
                        _ms(row["p50Ms"]),
                        _ms(row["p95Ms"]),
                    ]
                )
    return lines


def _budget(row: Row) -> float:
    return top_budget(float(row["k"]), float(row["shards"]))


def _cursor_budget(results: dict[str, Any], row: Row) -> float:
    """A page after a cursor counts the board-wide rank of its first entry when it is read
    (the board may have changed since the cursor was made): the page's own budget plus the
    most items a rank read on the same board in this run."""
    ranks = _rows(results, pattern="rank", variant="service", size=row["size"], shards=row["shards"])
    return _budget(row) + max((float(rank["itemsRead"]) for rank in ranks), default=0.0)


def _verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _targets_section(results: dict[str, Any]) -> list[str]:
    """The issue's targets, each next to the worst figure this run measured for it."""
    lines: list[list[str]] = []
    top = _rows(results, pattern="top", variant="service")
    cursor = _rows(results, pattern="top-after-cursor")
    churned = [(board, read) for board in results.get("churn") or [] for read in board["reads"]]
    if top:
        worst = max(top, key=lambda row: float(row["itemsRead"]) / _budget(row))
        over = [row for row in top if float(row["itemsRead"]) > _budget(row)]
        over += [read for _, read in churned if read["itemsMax"] > read["budget"]]
        lines.append(
            [
                "exact top-k: at most 1.5·k + 2·shards items read",
                f"worst {_number(worst['itemsRead'])} of {_number(_budget(worst))} "
                f"(k = {worst['k']:,}, {worst['shards']} shards, {worst['size']:,} members)"
                + (
                    f"; while scores change: at most {max(r['itemsMax'] for _, r in churned):,}"
                    if churned
                    else ""
                ),
                _verdict(not over),
            ]
        )
        if cursor:
            page = max(cursor, key=lambda row: float(row["itemsRead"]) / _cursor_budget(results, row))
            lines.append(
                [
                    "a page after a cursor, its ranks counted when it is read: at most the page's "
                    "1.5·k + 2·shards items plus what a rank reads on that board",
                    f"worst {_number(page['itemsRead'])} of {_number(_cursor_budget(results, page))} "
                    f"(k = {page['k']:,}, {page['shards']} shards, {page['size']:,} members)",
                    _verdict(all(float(row["itemsRead"]) <= _cursor_budget(results, row) for row in cursor)),
                ]
            )
        shares = [float(row["oneQueryRoundShare"]) for row in top + cursor]
        shares += [float(read["oneRoundShare"]) for _, read in churned]
        lines.append(
            [
                "exact top-k: one round of shard queries in at least 95% of requests",
                f"lowest share {min(shares):.1%} "
                "(first pages, pages after a cursor, and while scores change)",
                _verdict(min(shares) >= 0.95),
            ]
        )
    head = _rows(results, pattern="top", variant="head")
    if head:
        most = max(float(row["rcu"]) for row in head)
        requests = max(float(row["requests"]) for row in head)
        lines.append(
            [
                "top-k ≤ 100 from the head: one GetItem of at most 2 RCU",
                f"{requests:.0f} request (the board and the head in one BatchGetItem), "
                f"at most {_number(most)} RCU for both",
                _verdict(most <= 2 and requests == 1),
            ]
        )
    lags = [lag for board in results.get("churn") or [] for lag in board["lagsS"]]
    if lags:
        lines.append(
            [
                "the head lags the writes by at most 2 s",
                f"p50 {percentile(lags, 0.5):.2f} s, p95 {percentile(lags, 0.95):.2f} s, "
                f"max {max(lags):.2f} s over {len(lags)} probes, while scores change",
                _verdict(max(lags) <= 2.0),
            ]
        )
    if results.get("hot"):
        from bench import hot

        hot_target, hot_measured, hot_met = hot.target_row(results["hot"])
        lines.append([hot_target, hot_measured, _verdict(hot_met)])
    biggest = _largest(results)
    ranks = _rows(results, pattern="rank", variant="service", size=biggest)
    if ranks:
        rcu = max(float(row["rcu"]) for row in ranks)
        rounds = max(float(row["rounds"]) for row in ranks)
        naive = max(
            float(row["rcu"]) for row in _rows(results, pattern="rank", variant="naive", size=biggest)
        )
        lines.append(
            [
                f"rank on a {biggest:,}-member board: at most 3 round trips and 50 RCU, exact",
                f"at most {rounds:.0f} round trips and {_number(rcu)} RCU at every depth "
                f"(the naive COUNT: up to {_number(naive)} RCU)",
                _verdict(rcu <= 50 and rounds <= 3)
                if biggest >= 1_000_000
                else "not measured at 1,000,000 members",
            ]
        )
    spread = _rows(results, pattern="ranks", variant="service")
    if spread:
        costliest = max(spread, key=lambda row: float(row["rcu"]))
        lines.append(
            [
                "`POST ranks` of 100 members spread over the listing: at most 500 RCU on any board",
                f"at most {_number(costliest['rcu'])} RCU ({costliest['shards']} shards, "
                f"{costliest['size']:,} members)",
                _verdict(float(costliest["rcu"]) <= 500),
            ]
        )
    grown = results.get("grown")
    if grown:
        from bench.grown import RANKS_IDS

        settled = {(r["pattern"], r["variant"]): r for r in grown["settled"]}
        while_writing = {(r["pattern"], r["variant"]): r for r in grown["whileWriting"]}
        rank_rcu = [float(r["rcu"]) for k, r in settled.items() if k[0] == "rank"]
        rank_rcu += [float(r["rcuMax"]) for k, r in while_writing.items() if k[0] == "rank"]
        rank_rounds = [float(r["rounds"]) for k, r in settled.items() if k[0] == "rank"]
        rank_rounds += [float(r["roundsMax"]) for k, r in while_writing.items() if k[0] == "rank"]
        exact = all(r["exact"] for r in grown["settled"]) and all(r["exact"] for r in grown["exactAfter"])
        lines.append(
            [
                f"rank on a {grown['members']:,}-member board grown through the API, also while scores "
                "change: at most 50 RCU, exact",
                f"at most {_number(max(rank_rcu))} RCU and {max(rank_rounds):.0f} round trips; "
                + ("exact" if exact else "**not exact**"),
                _verdict(max(rank_rcu) <= GROWN_TARGETS["rank"] and exact),
            ]
        )
        ranks_bound = (
            f"the union of their paths in the count tree besides the {RANKS_IDS} members' own score items"
        )
        for pattern, bound in (("ranks", ranks_bound), ("around", "two ranks")):
            rows = [r for k, r in settled.items() if k[0] == pattern]
            rows_while_writing = [r for k, r in while_writing.items() if k[0] == pattern]
            most = max([float(r["rcu"]) for r in rows] + [float(r["rcuMax"]) for r in rows_while_writing])
            lines.append(
                [
                    f"`{pattern}` on that board, also while scores change: at most {bound}",
                    f"at most {_number(most)} RCU",
                    _verdict(most <= _grown_bound(grown, pattern)),
                ]
            )
    writes = _rows(results, pattern="write", variant="submit_score")
    if writes:
        wcu = max(float(row["wcu"]) for row in writes)
        lines.append(
            [
                "a score update: at most 3 WCU whatever the size of `data`",
                f"at most {_number(wcu)} WCU, with 60 KB of `data` too",
                _verdict(wcu <= 3),
            ]
        )
    cold = (results.get("coldStart") or {}).get("result")
    if cold:
        lines.append(
            [
                "importing a handler: at most 1.3 x a bare `import boto3`",
                f"at most {cold['max_fastest_ratio']:.2f} x by the fastest runs "
                f"({cold['max_ratio']:.2f} x by medians, {cold['max_ratio_handler']}; see Cold start)",
                _verdict(cold["max_fastest_ratio"] <= 1.3),
            ]
        )
    measured = results.get("worst")
    if measured and measured.get("rows"):
        per_route = _worst_per_route(measured)
        over = [row for row in per_route if row["rcu"] > measured["boundRcu"]]
        heaviest = max(per_route, key=lambda row: float(row["rcu"]))
        lines.append(
            [
                f"no single request reads more than {_number(measured['boundRcu'])} RCU",
                f"{len(per_route) - len(over)} of {len(per_route)} routes within it at their worst; the "
                f"heaviest: {heaviest['route']}, {_number(heaviest['rcu'])} RCU (see Worst case per route)",
                _verdict(not over),
            ]
        )
    checks = results["checks"]
    agreed = sum(1 for check in checks if check["ok"])
    lines.append(
        [
            "exact answers",
            f"{agreed} of {len(checks)} answers equal to the naive pattern's",
            _verdict(agreed == len(checks)),
        ]
    )
    return _table(["target", "measured in this run", ""], lines)


def _worst_per_route(worst: dict[str, Any]) -> list[Row]:
    """Each route's costliest case, in the order the routes were measured."""
    found: dict[str, Row] = {}
    for row in worst["rows"]:
        if row["route"] not in found or float(row["rcu"]) > float(found[row["route"]]["rcu"]):
            found[row["route"]] = row
    return list(found.values())


def _board(row: Row) -> str:
    if row.get("members") is None:
        return "-"
    return f"{row['members']:,} members, {row['shards']} shard{'s' if row['shards'] != 1 else ''}"


def _exact(row: Row) -> str:
    return "-" if row.get("exact") is None else ("yes" if row["exact"] else "**no**")


def worst_table(worst: dict[str, Any]) -> list[str]:
    """The table "Worst case per route": each route's costliest case measured by
    ``bench.worst``, next to the bound."""
    bound = float(worst["boundRcu"])
    return _table(
        ["route", "its worst case", "board", "RCU", "requests", "round trips", "exact", "bound"],
        (
            [
                f"`{row['route']}`",
                row["case"],
                _board(row),
                _number(row["rcu"]),
                _number(row["requests"]),
                _number(row["rounds"]),
                _exact(row),
                f"{_number(bound)} RCU: " + ("met" if float(row["rcu"]) <= bound else "**not met**"),
            ]
            for row in _worst_per_route(worst)
        ),
    )


def worst_cases(worst: dict[str, Any]) -> list[str]:
    """Every case ``bench.worst`` measured."""
    return _table(
        ["route", "case", "board", "RCU", "items read", "requests", "round trips", "ms", "exact"],
        (
            [
                f"`{row['route']}`",
                row["case"],
                _board(row),
                _number(row["rcu"]),
                _number(row["itemsRead"]),
                _number(row["requests"]),
                _number(row["rounds"]),
                _ms(row["ms"]),
                _exact(row),
            ]
            for row in worst["rows"]
        ),
    )


def _worst_section(results: dict[str, Any]) -> list[str]:
    worst = results.get("worst")
    if not worst or not worst.get("rows"):
        return []
    plan = worst["plan"]
    out = ["## Worst case per route", ""]
    out += [
        f"`bench/worst.py` builds what makes each route read the most (boards of {plan['members']:,} members "
        f"on {' and '.join(str(s) for s in plan['shards'])} shards, 100 members with 64 KiB of `data`, "
        f"up to {plan['fresh_with_ids']:,} events of a member not yet "
        "folded, inboxes and snapshot lists with expired items not yet removed, a member followed by "
        f"{plan['followers']:,}) and sends each route's worst request; docs/capacity.md explains the "
        f"bound. Each route's costliest case, next to the bound of {_number(worst['boundRcu'])} RCU a "
        "request:",
        "",
        *worst_table(worst),
        "",
        "Every case measured (`python -m bench.worst` measures them alone):",
        "",
        *worst_cases(worst),
        "",
    ]
    return out


def _grown_bound(grown: dict[str, Any], pattern: str) -> float:
    """The bound stated for ``ranks`` and ``around`` in docs/performance.md, in RCU: ranks
    reads the union of the members' paths in the count tree, one node a member at most on
    each level (0.5 RCU a node); a tree grown by inserts holds half its limits a node at the
    least, so its paths are at most those of a tree built over twice the members
    (``podium.cost.path_units``); besides them the members' own score items (one consistent
    read each, 1 RCU) and the board. around reads a rank's count beside gathers of 100 keys
    below the member and 101 above: at most two ranks."""
    from bench.grown import RANKS_IDS
    from podium import cost

    if pattern == "ranks":
        return float(cost.path_units(2 * grown["members"], RANKS_IDS) + RANKS_IDS * 1.0 + 1)
    return 2 * GROWN_TARGETS["rank"]


def _scores_section(results: dict[str, Any]) -> list[str]:
    """``GET .../scores`` and ``rank``'s ``topPercent`` (bench/scores.py)."""
    bands = _rows(results, pattern="scores", variant="service")
    shares = _rows(results, pattern="topPercent", variant="service")
    if not bands and not shares:
        return []
    out = [
        "## Score ranges",
        "",
        "`GET .../scores` (`ScoreBands.scores`): the first page of a band that starts 1 % down the "
        "listing, at the median, and one that ends at the last member, with pages of 10 and 100. "
        "Beside each, measured apart: a `rank` of the band's first member (the count a band's page "
        "makes) and a first page of `top` of the same size from the index (`consistent`, steered by "
        "the head: the gather a band's page makes, which has no head to steer it). Every page is "
        "checked against a sorted list (## Checks).",
        "",
    ]
    for shown in _shown_sizes(results):
        lines = [
            [
                str(row["shards"]),
                f"{row['depth']} (#{row['position']:,})",
                str(row["k"]),
                _number(row.get("itemsRead")),
                _number(row.get("rcu")),
                _number(row.get("requests")),
                _number(row.get("rounds")),
                _number(row.get("rankRcu")),
                _number(row.get("topRcu")),
                _ms(row["p50Ms"]),
                _ms(row["p95Ms"]),
            ]
            for row in bands
            if row["size"] == shown
        ]
        if lines:
            header = ["shards", "band from", "limit", "items read", "RCU", "requests", "rounds"]
            header += ["rank RCU", "top RCU", "p50 ms", "p95 ms"]
            out += [f"At {shown:,} members:", "", *_table(header, lines), ""]
    out += [
        "`topPercent` comes with every `rank`: the same read, at each depth, its value checked "
        "against `100 * rank / total` rounded up in exact fractions. Its cost is the rank's (## Rank).",
        "",
    ]
    for shown in _shown_sizes(results):
        lines = []
        for row in shares:
            if row["size"] != shown:
                continue
            rank = _one(
                results,
                pattern="rank",
                variant="service",
                size=shown,
                shards=row["shards"],
                depth=row["depth"],
            )
            lines.append(
                [
                    str(row["shards"]),
                    f"{row['depth']} (#{row['position']:,})",
                    row["topPercent"],
                    _number(row.get("rcu")),
                    _number(row.get("requests")),
                    _number((rank or {}).get("rcu")),
                    _number((rank or {}).get("requests")),
                ]
            )
        if lines:
            header = ["shards", "depth", "topPercent", "RCU", "requests", "rank RCU", "rank requests"]
            out += [f"At {shown:,} members:", "", *_table(header, lines), ""]
    return out


def _reshard_section(results: dict[str, Any]) -> list[str]:
    """A board moved to another shard count by the worker (bench/reshardrun.py)."""
    moved = results.get("reshard")
    if not moved:
        return []
    from bench.reshardrun import PHASES

    lines = [
        [
            name,
            _number(moved["phases"][key]["seconds"]),
            _number(moved["phases"][key]["membersPerSecond"], 0),
            _number(moved["phases"][key]["wcuPerMember"], 2),
            _number(moved["phases"][key]["rcuPerMember"], 3),
            _number(moved["phases"][key]["minutesPerMillion"]),
        ]
        for key, name in PHASES.items()
    ]
    header = ["phase", "seconds", "members/s", "WCU a member", "RCU a member", "minutes a million"]
    return [
        "## Re-sharding",
        "",
        f"A board of {moved['members']:,} members moved from {moved['fromShards']} to {moved['toShards']} "
        "shards by one worker (`podium.resharding`, in this process, on a DynamoDB Local of its own, its "
        "clock moved past each phase's wait): every member keyed in the second index on the new count, the "
        "switch, then the first index's key removed. `make bench-reshard N=...` measures it alone at any "
        "size; docs/capacity.md (Re-sharding) says what a move costs on AWS.",
        "",
        *_table(header, lines),
        "",
        f"Members left keyed anywhere but in the new index on their new shard: {moved['misplaced']}.",
    ]


def _churn_section(results: dict[str, Any]) -> list[str]:
    boards = results.get("churn") or []
    if not boards:
        return []
    plan = results["churnPlan"]
    out = [
        "## Top-k while scores change",
        "",
        "The tables above read boards that stand still, with a head just read from the index. Here a "
        f"board of {plan['members']:,} members (operator `set`) changes for {plan['seconds']:.0f} s "
        f"while it is read (`bench/churn.py`): writers set about {plan['writesPerSecond']:.0f} scores a "
        "second, a third to random members and scores, a third into the top 1,000 (arrivals), a third "
        "from the top 1,000 to below it (departures). The table's stream is read once a second (the "
        "aggregator's batching window) and each batch goes to `Aggregator.keep_heads`, the aggregator's "
        "own code for the head and its ladder. A reader reads the top 10, 100 and 1,000 with "
        "`consistent=true` and pages 2 to 5 of 100 after a cursor, each steered by the head as it is at "
        "that moment. Items read count the board and the head item besides the index keys.",
        "",
    ]
    lines = []
    for board in boards:
        for read in board["reads"]:
            lines.append(
                [
                    str(board["shards"]),
                    read["read"],
                    f"{read['reads']:,}",
                    f"{read['oneRoundShare']:.1%}",
                    str(read["mostRounds"]),
                    _number(read["itemsP50"]),
                    _number(read["itemsP95"]),
                    f"{read['itemsMax']:,}",
                    _number(read["budget"]),
                ]
            )
    out += _table(
        [
            "shards",
            "read",
            "reads",
            "one round",
            "most rounds",
            "items p50",
            "items p95",
            "items max",
            "1.5·k + 2·shards",
        ],
        lines,
    )
    out += [
        "",
        "How far the head trails the writes: every 3 s a probe sets one member to a new best score "
        "and times how long the head (`top?limit=1`, not consistent) takes to list it first.",
        "",
    ]
    out += _table(
        ["shards", "writes/s", "stream records", "probes", "lag p50", "lag p95", "lag max"],
        (
            [
                str(board["shards"]),
                f"{board['writesPerSecond']:.0f}",
                f"{board['records']:,}",
                str(len(board["lagsS"])),
                f"{percentile(board['lagsS'], 0.5):.2f} s" if board["lagsS"] else "-",
                f"{percentile(board['lagsS'], 0.95):.2f} s" if board["lagsS"] else "-",
                f"{max(board['lagsS']):.2f} s" if board["lagsS"] else "-",
            ]
            for board in boards
        ),
    )
    out += [
        "",
        "In AWS the lag adds the stream's own delay (DynamoDB Streams publishes a change typically within "
        "a second) and Lambda's batching window; the local consumer here polls the stream as often as "
        "that window allows.",
        "",
    ]
    return out


GROWN_TARGETS = {"rank": 50.0}  # RCU


def _grown_section(results: dict[str, Any]) -> list[str]:
    grown = results.get("grown")
    if not grown:
        return []
    out = [
        "## Rank, ranks and around on a board grown through the API",
        "",
        f"The boards above are loaded in bulk and their count trees built. This one grows the way users "
        f"grow a board (`bench/grown.py`): the local stack of `make run` serves the API on this run's "
        f"DynamoDB Local and runs the stream consumers with the template's batch settings; "
        f"{grown['writers']} clients add {grown['members']:,} members to a `set` board of "
        f"{grown['shards']} shards with `PUT .../members/{{id}}` and a score, all at once "
        f"({grown['growSeconds']:.0f} s; `memberCount` whole and the stream caught up, five ranks "
        f"spread over the listing equal to the model's, {grown['settleSeconds']:.0f} s later). "
        "Then the reads below are measured on it, once as it stands and again and again while "
        f"{grown['churnWriters']} clients set random scores for {grown['churnSeconds']:.0f} s "
        f"({grown['churnWrites']:,} writes). Every request the reader's service sends during a read is "
        "counted. At the end the board has "
        f"a count tree of {grown['treeNodes']:,} nodes on {grown['treeLevels']} levels, kept by the stream.",
        "",
    ]
    while_writing = {(r["pattern"], r["variant"]): r for r in grown["whileWriting"]}
    lines = []
    for row in grown["settled"]:
        key = (row["pattern"], row["variant"])
        churned = while_writing.get(key)
        lines.append(
            [
                f"`{row['pattern']}`",
                row["variant"],
                _number(row["rcu"]),
                _number(row["itemsRead"]),
                _number(row["rounds"]),
                "yes" if row["exact"] else "**no**",
                _number(churned["rcuP50"]) if churned else "-",
                _number(churned["rcuMax"]) if churned else "-",
                str(churned["roundsMax"]) if churned else "-",
                f"{churned['reads']:,}" if churned else "-",
            ]
        )
    out += _table(
        [
            "read",
            "which",
            "RCU",
            "items read",
            "rounds",
            "exact",
            "RCU p50 while writing",
            "RCU max while writing",
            "most rounds",
            "reads",
        ],
        lines,
    )
    wrong = [f"`{r['pattern']}` {r['variant']}" for r in grown["exactAfter"] if not r["exact"]]
    out += [
        "",
        f"Once the writers stopped, the stream caught up within {grown['drainSeconds']:.0f} s, and "
        + (
            "every read above answered exactly what a sorted list of the written scores says."
            if not wrong
            else f"these reads did **not** answer what a sorted list says: {', '.join(wrong)}."
        ),
        "Ranks `rank` at the depths given; `ranks` of 100 members drawn at random; `around` with "
        "radius 50 around the member at that depth.",
        "",
    ]
    return out


def _measured_again(results: dict[str, Any]) -> list[str]:
    """A sentence naming the sections a later `python -m bench --<part>-only` measured again
    into these results, and when: their figures are not from the run the page is dated by."""
    again = results.get("measuredAgain") or {}
    if not again:
        return []
    parts = ", ".join(f"{part} (`python -m bench --{part}-only`, {at})" for part, at in sorted(again.items()))
    return ["", f"Measured again since, alone on the machine, into the same results: {parts}."]


def document(results: dict[str, Any], images: list[str], image_dir: str) -> str:
    plan = results["plan"]
    size = _largest(results)
    m = results["machine"]
    out: list[str] = ["# Benchmarks", ""]
    out += [
        f"Generated by `make bench{' QUICK=1' if results['quick'] else ''}` on {results['ranAt']}, "
        f"in {results['seconds'] / 60:.0f} minutes. Every table and figure on this page comes from that "
        "command: run it again to refresh them. The raw results are in "
        f"`bench-data/{'quick/' if results['quick'] else ''}results.json` (not committed).",
        *_measured_again(results),
        "",
        "## Targets",
        "",
        "What the issue asks, next to the worst figure this run measured for it (the sections below "
        "have every figure):",
        "",
        *_targets_section(results),
        "",
        "## How to run",
        "",
        "```bash",
        "make bench                          # the full run, about 45 minutes; writes this page",
        "make bench QUICK=1                  # a smoke run in about 2 minutes, written to bench-data/quick/",
        "BENCH_MAX_MEMBERS=100000 make bench # stop growing the boards at 100,000 members",
        "BENCH_BUDGET_S=300 make bench       # seconds of loading before growth stops (600 by default)",
        "BENCH_BIG_MEMBERS=300000 make bench # the one big board's size (1,000,000 by default; 0: none)",
        "BENCH_CHURN_S=0 make bench          # skip top-k while scores change (60 s a board by default)",
        "python -m bench --coldstart-only    # measure cold start again into the last results, rewrite",
        "python -m bench --probe-only        # one request of each kind again into the last results, rewrite",
        "python -m bench --worst-only        # each route's worst case again into the last results, rewrite",
        "python -m bench --grown-only        # the board grown through the API again, rewrite",
        "python -m bench.worst --small       # the worst cases alone, 20,000 members, into bench-data/worst/",
        "BENCH_WORST_MEMBERS=200000 make bench # the worst cases' boards (1,000,000 by default; 0: none)",
        "```",
        "",
        "`make bench` installs what it needs: the packages of `requirements-bench.txt` into `.venv`, and "
        "`redis-server` from Debian's packages when it is missing. It starts DynamoDB Local (in memory) and "
        "redis-server, each on a free port, and stops them by PID. It creates the tables from "
        "`template.yaml`, as the local stack does, but without the stream: no consumer runs, so "
        "`memberCount` is set after each load and the head item and count tree are rebuilt with "
        "`Services.rebuild_rank_structures`.",
        "",
        "It grows one board per shard count ("
        + ", ".join(str(s) for s in plan["shards"])
        + ") through "
        + ", ".join(f"{s:,}" for s in plan["sizes"])
        + " members. A member is the two items the service "
        "writes: its `MEMBER` profile and its `SCORE#all` item with the index keys `rpk`/`rsk`, built by "
        "the store's own helper. The load uses BatchWriteItem, 25 items a call, from 4 threads. Scores "
        "are random integers from 0 to 10^7; one in ten is a multiple of 10,000, so scores tie. Every "
        "board and the Redis sorted set get the same members and scores.",
        "",
        "Each request carries `ReturnConsumedCapacity=INDEXES` (a botocore `provide-client-params` hook), "
        "and an `after-call` hook records what it consumed, its `ScannedCount`, and when it started and "
        "ended. **Rounds** are sequential round trips: requests that overlap in time share a round, and "
        "a request that starts after every earlier one ended opens a new one. The shard queries of one "
        "call run concurrently (`Database.gather`), so they are one round. Each measurement runs once to "
        f"warm up, then {plan['minRuns']} to {plan['maxRuns']} times (until {plan['cellSeconds']} s have "
        "passed). Costs are the median run's, latencies are p50 and p95 over the runs.",
        "",
        "## The machine",
        "",
    ]
    out += _table(
        ["", ""],
        [
            ["CPU", f"{m['cpu']}, {m['cores']} cores"],
            ["memory", m["memory"]],
            ["OS", m["os"]],
            ["Python", m["python"]],
            ["Java", m["java"]],
            ["DynamoDB Local", f"`{m['dynamodbLocal']}`, `-inMemory`"],
            ["Redis", m["redis"]],
        ],
    )
    out += [
        "",
        "The client, DynamoDB Local and Redis share these cores, so latencies here are local "
        "round trips on a busy machine, not DynamoDB's. Capacity units and items read do not depend on "
        "the machine.",
        "",
        "## What DynamoDB Local reports",
        "",
        "One request of each kind the service sends, on scratch items, as this run saw it:",
        "",
    ]
    out += _capacity_section(results)
    out += [
        "",
        "DynamoDB Local computes capacity units from item sizes, as DynamoDB's pricing does: reads in 4 KB "
        "units (half for eventually consistent reads; a query sums the sizes of every item it scans, "
        "`Select=COUNT` included), writes in 1 KB units, and an index write for every index entry added or "
        "removed. A read that finds nothing is billed the least unit of its kind by DynamoDB: 0.5 RCU "
        "eventually consistent, 1 consistent. DynamoDB Local reports 0 for a query that matches nothing "
        "(above), so the RCU columns below count such a query at DynamoDB's minimum instead. What it does "
        "**not** emulate: provisioned or on-demand "
        "limits and throttling, partition "
        "throughput limits (1,000 WCU / 3,000 RCU per partition) and adaptive capacity, a GSI's "
        "replication lag, and the network. So the units below are what AWS would bill, while the latencies "
        "are only relative.",
        "",
        "## Loading",
        "",
    ]
    out += _table(
        ["members per board", "items written", "seconds", "items/s"],
        (
            [
                f"{load['size']:,}",
                f"{load['items']:,}",
                f"{load['seconds']:.0f}",
                f"{load['itemsPerSecond']:,.0f}",
            ]
            for load in results["loads"]
        ),
    )
    if results.get("stopped") and results["loaded"] > results["stopped"]["at"]:
        out += [
            "",
            f"**Growth stopped at {results['loaded']:,} members**, short of the next planned size: "
            "see the notes.",
        ]
    elif results.get("stopped"):
        stop = results["stopped"]
        out += [
            "",
            f"**Growth stopped at {stop['at']:,} members**: the next step, to {stop['next']:,}, "
            "would have taken "
            f"about {stop['estimate']:.0f} s more, past the loading budget of {plan['budgetSeconds']:.0f} s "
            f"({stop['spent']:.0f} s spent). Raise `BENCH_BUDGET_S` to go further.",
        ]
    elif results["loaded"] < max(plan["sizes"]):
        out += ["", f"The run ended at {results['loaded']:,} members."]
    if results["rebuilds"]:
        out += ["", "What `rebuild_rank_structures` cost after each step:", ""]
        out += _table(
            ["members", "shards", "seconds", "RCU", "WCU"],
            (
                [
                    f"{r['size']:,}",
                    str(r["shards"]),
                    f"{r['seconds']:.1f}",
                    _number(r["rcu"]),
                    _number(r["wcu"]),
                ]
                for r in results["rebuilds"]
            ),
        )
    out += ["", "## Top-k", ""]
    out += [
        "- **naive scatter-gather**: the references' pattern. Query every shard for its first k keys and "
        "merge them. It reads k items per shard, `shards * k` in all.",
        "- **service (consistent)**: `Services.top(board, k, None, False, consistent=True)`, the "
        "exact path: the board and its head in one BatchGetItem, then one query per shard that stops at "
        "the head's hint (docs/performance.md).",
        "- **service (head item)**: `top(..., consistent=False)` for k ≤ 100, served from the head item "
        "that the stream consumer keeps.",
        "",
    ]
    if "bench-top-items.png" in images:
        out += [f"![items read by top-k against board size]({image_dir}/bench-top-items.png)", ""]
    for shown in _shown_sizes(results):
        out += [f"At {shown:,} members:", ""]
        out += _table(
            ["shards", "k", "how", "items read", "RCU", "requests", "rounds", "p50 ms", "p95 ms"],
            _top_lines(results, shown),
        )
        out += [""]
    out += ["", "Items read by top 100 as the board grows:", ""]
    sizes = sorted({row["size"] for row in results["rows"]})
    header = ["shards", "how", *[f"{s:,}" for s in sizes]]
    lines = []
    for count in plan["shards"]:
        for variant in ("naive", "service", "head"):
            cells = [
                _number(
                    (_one(results, pattern="top", variant=variant, shards=count, k=100, size=s) or {}).get(
                        "itemsRead"
                    )
                )
                for s in sizes
            ]
            lines.append([str(count), VARIANT_NAMES[variant], *cells])
    out += _table(header, lines)
    out += ["", "## Pages after a cursor", ""]
    out += [
        f"Pages 2 to {plan['pages'] + 1} of {plan['pageSize']} entries, each after the previous page's "
        "`nextCursor`, read as a client reads them by default (not `consistent`): the page's keys from the "
        "index, steered by the head, and its place in the listing counted when it is read, from the count "
        "tree as a rank is (with `consistent=true` the place is counted from the index itself while that "
        "fits the 500 RCU bound). **Shard-query rounds** are the rounds of shard queries "
        "the read took, as `gather_top` counts them (`ReadService.top_read`: every query "
        "of a round is sent at once, up to 100 in flight); **one round** is the share of pages that "
        "took one.",
        "",
    ]
    out += _table(
        [
            "members",
            "shards",
            "items read",
            "RCU",
            "requests",
            "rounds",
            "shard-query rounds",
            "one round",
            "p50 ms",
            "p95 ms",
        ],
        (
            [
                f"{row['size']:,}",
                str(row["shards"]),
                _number(row["itemsRead"]),
                _number(row["rcu"]),
                _number(row["requests"]),
                _number(row["rounds"]),
                _number(row["queryRounds"]),
                f"{row['oneQueryRoundShare']:.0%}",
                _ms(row["p50Ms"]),
                _ms(row["p95Ms"]),
            ]
            for row in _rows(results, pattern="top-after-cursor")
        ),
    )
    first_pages = _rows(results, pattern="top", variant="service")
    if first_pages:
        share = sum(row["oneQueryRoundShare"] * row["runs"] for row in first_pages) / sum(
            row["runs"] for row in first_pages
        )
        out += [
            "",
            f"First pages (`top` without a cursor, every size, shard count and k): {share:.0%} "
            "needed one round of shard queries.",
        ]
    out += ["", *_churn_section(results)]
    if results.get("hot"):
        from bench import hot

        out += ["", *hot.section(results["hot"], _table)]
    out += ["", *_grown_section(results)]
    out += ["", *_worst_section(results)]
    out += ["", "## Rank", ""]
    out += [
        "- **naive**: the references' pattern: read the member's score, then `Select=COUNT` of every entry "
        "above it on every shard. It reads everyone above the member.",
        "- **service**: `Services.rank(board, member)`, on the count tree the stream keeps: the nodes on "
        "the path from its root to the member's leaf, in one BatchGetItem (or on a small board a COUNT "
        "of the index).",
        "- **Redis**: `ZSCORE`, then `ZCOUNT` of the strictly greater scores, + 1.",
        "",
        "Members are picked at depths of the listing: the first, 1 %, 10 %, 50 %, 90 % and the last.",
        "",
    ]
    if "bench-rank-rcu.png" in images:
        out += [f"![RCU of a rank by depth]({image_dir}/bench-rank-rcu.png)", ""]
    for shown in _shown_sizes(results):
        out += [f"At {shown:,} members:", ""]
        lines = []
        for count in [*plan["shards"], None]:
            for row in _rows(results, pattern="rank", size=shown, shards=count):
                lines.append(
                    [
                        "-" if count is None else str(count),
                        f"{row['depth']} (#{row['position']:,})",
                        str(VARIANT_NAMES.get(row["variant"], row["variant"])).replace(" (consistent)", ""),
                        _number(row.get("itemsRead")),
                        _number(row.get("rcu")),
                        _number(row.get("requests")),
                        _number(row.get("rounds")),
                        _ms(row["p50Ms"]),
                        _ms(row["p95Ms"]),
                    ]
                )
        out += _table(
            ["shards", "depth", "how", "items read", "RCU", "requests", "rounds", "p50 ms", "p95 ms"], lines
        )
        out += [""]
    ranks = _rows(results, pattern="ranks", variant="service")
    if ranks:
        out += [
            "`POST .../ranks` of 100 members spread evenly over the listing, each in a leaf of the count "
            "tree of its own (the most nodes 100 ids can read): their score items, then the union of "
            "their paths in one BatchGetItem.",
            "",
        ]
        out += _table(
            ["members", "shards", "items read", "RCU", "requests", "rounds", "p50 ms", "p95 ms"],
            (
                [
                    f"{row['size']:,}",
                    str(row["shards"]),
                    _number(row.get("itemsRead")),
                    _number(row.get("rcu")),
                    _number(row.get("requests")),
                    _number(row.get("rounds")),
                    _ms(row["p50Ms"]),
                    _ms(row["p95Ms"]),
                ]
                for row in ranks
            ),
        )
        out += [""]
    out += ["", *_scores_section(results)]
    out += ["", *_reshard_section(results)]
    out += ["", "## Writes", ""]
    out += [
        "`submit_score` on members already on the board (an `increment`, so the index key moves), the "
        "same on a member whose profile holds 60 KB of `data`, `put_member` replacing that data, and "
        f"`put_member` adding a new member. At {size:,} members:",
        "",
    ]
    out += _table(
        ["write", "shards", "WCU", "RCU", "index units", "requests", "p50 ms", "p95 ms"],
        (
            [
                row["what"],
                str(row["shards"]),
                _number(row["rcu"]),
                _number(row["indexUnits"]),
                _number(row["requests"]),
                _ms(row["p50Ms"]),
                _ms(row["p95Ms"]),
            ]
            for row in _rows(results, pattern="write", size=size)
        ),
    )
    out += ["", "## Latency, with Redis", ""]
    if "bench-latency.png" in images:
        out += [f"![latency p50 and p95]({image_dir}/bench-latency.png)", ""]
    out += ["Redis at every size (milliseconds, p50 / p95):", ""]
    lines = []
    for s in sizes:
        cells = [f"{s:,}"]
        found = [_one(results, pattern="top", variant="redis", size=s, k=k) for k in plan["ks"]]
        found.append(_one(results, pattern="rank", variant="redis", size=s, depth="50%"))
        cells += [f"{_ms(row['p50Ms'])} / {_ms(row['p95Ms'])}" if row else "-" for row in found]
        lines.append(cells)
    out += _table(["members", *[f"ZREVRANGE top {k:,}" for k in plan["ks"]], "rank at 50 %"], lines)
    out += ["", "## Cold start", ""]
    out += [
        "`bench/coldstart.py` times a fresh process importing each function's handler, next to a bare "
        "`import boto3` (`BENCH_COLDSTART_REPEATS` runs each, 21 by default; `BENCH_COLDSTART=0` skips it). "
        "The same import takes noticeably more or less time from one fresh process to the next on this "
        "machine (the last line below gives the range of the bare `import boto3`), so a median of a few "
        "dozen runs still moves by several per cent from one run of the bench to the next. The fastest of "
        "the runs is the steadiest figure, since other load only ever adds time (the advice of Python's "
        "`timeit`): the targets table judges on it, with the medians next to it.",
        "",
    ]
    cold = results.get("coldStart")
    if cold and cold.get("markdown"):
        out += [cold["markdown"]]
    elif cold:
        out += ["```", str(cold["result"]), "```"]
    else:
        out += ["Not measured in this run (see the notes below)."]
    out += ["", "## Checks", ""]
    failed = [c for c in results["checks"] if not c["ok"]]
    agreed = len(results["checks"]) - len(failed)
    out += [
        f"Every measured answer of the service was compared with the naive one: {agreed} agreed, "
        f"{len(failed)} did not."
    ]
    for check in failed:
        out.append(f"- {check['check']} at {check['size']:,} members, {check['shards']} shards: **differs**")
    if results["notes"]:
        out += ["", "## Notes from this run", ""]
        out += [f"- {note}" for note in results["notes"]]
    return "\n".join(out) + "\n"


# What the page keeps of itself when it is written again: the figures of the commands run
# apart from `make bench` (`make bench-treewrites`, `bench-quiet`, `bench-fresh`...), each
# with its command and date, from this line to the end.
APART = "<!-- measured apart from make bench: kept when the page is written again -->"


def write(results: dict[str, Any], out: Path) -> Path:
    """``out``/benchmarks.md and ``out``/img/bench-*.png; the page's part measured apart
    (``APART`` to the end) is kept as it was."""
    images = plot(results, out / "img")
    page = out / "benchmarks.md"
    kept = ""
    if page.exists() and APART in page.read_text():
        kept = "\n" + page.read_text()[page.read_text().index(APART) :]
    page.write_text(document(results, images, "img") + kept)
    return page
