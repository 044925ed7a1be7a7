"""What the same workload costs on a Redis sorted set in ElastiCache, node cluster or
Serverless (Valkey), beside Podium's DynamoDB; and the write rates below which Podium costs
less (the break-even rates).

Only the data tier is compared: the front door, Lambda and data out are the same lines
for both designs (a Redis design adds the VPC that Lambda needs to reach the cache, not
counted here). List prices for us-east-1 as read on ``PRICE_DATE``; the assumptions about
ECPUs are marked. docs/capacity.md, "Podium or a managed Redis", explains every figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from planner import capacity

PRICE_DATE = "2026-11-29"
HOURS_PER_MONTH = 730

# -- A node cluster: a primary and two replicas in three Availability Zones -----------------
NODE_TYPE = "cache.r7g.large"  # 2 vCPU, 13 GiB: a 1,000,000-member sorted set takes ~100 MB
NODE_HOUR = 0.219  # on demand, Redis OSS (as recorded on 2026-11-25; Valkey nodes cost 20 % less)
NODES = 3

# -- ElastiCache Serverless, Valkey ------------------------------------------------------------
SERVERLESS_ECPU_PER_MILLION = 0.0023  # dollars a million ECPUs
SERVERLESS_GB_HOUR = 0.084  # dollars a GB-hour of data stored
SERVERLESS_MIN_GB = 0.1  # a Valkey cache is billed for at least 100 MB (Redis OSS: 1 GB)
# assumed: a sorted-set member takes about 100 bytes (a 1,000,000-member set ~100 MB)
SORTED_SET_BYTES_PER_MEMBER = 100
# An ECPU is a KB transferred by a simple command; a command that takes more vCPU time than
# a GET costs more, the higher of its vCPU time and its KB. Assumed: a sorted-set command
# (ZADD, ZREVRANK, ZREVRANGE: O(log N)) takes twice a GET's vCPU time, so at least 2 ECPUs,
# and a top page is also its bytes: about 30 B an entry (id, score, framing).
SORTED_SET_COMMAND_ECPUS = 2.0
ECPU_BYTES = 1_024
TOP_ENTRY_BYTES = 30


def node_cluster_monthly() -> float:
    """Three nodes' hours, used or not."""
    return NODES * NODE_HOUR * HOURS_PER_MONTH


def top_ecpus(entries: int) -> float:
    """ECPUs of one top page (``ZREVRANGE 0 k-1 WITHSCORES``): its bytes or its vCPU time."""
    return max(SORTED_SET_COMMAND_ECPUS, entries * TOP_ENTRY_BYTES / ECPU_BYTES)


@dataclass(frozen=True)
class Commands:
    """A Redis workload: sorted-set commands a second and the members stored."""

    writes_per_s: float  # ZADD
    top_reads_per_s: float  # ZREVRANGE
    rank_reads_per_s: float  # ZREVRANK
    top_entries: int  # entries a top page returns
    members: int  # in all the sorted sets


def serverless_monthly(c: Commands) -> float:
    """ECPUs for every command, and the data stored (at least the minimum), a month."""
    ecpus_per_s = (c.writes_per_s + c.rank_reads_per_s) * SORTED_SET_COMMAND_ECPUS
    ecpus_per_s += c.top_reads_per_s * top_ecpus(c.top_entries)
    ecpus = ecpus_per_s * capacity.SECONDS_PER_MONTH / 1e6 * SERVERLESS_ECPU_PER_MILLION
    gb = max(SERVERLESS_MIN_GB, c.members * SORTED_SET_BYTES_PER_MEMBER / capacity.BYTES_PER_GB)
    return ecpus + gb * SERVERLESS_GB_HOUR * HOURS_PER_MONTH


def break_even(podium: Callable[[float], float], other: Callable[[float], float], most: float = 1e6) -> float:
    """The write rate (changes a second) below which ``podium(rate)`` costs less than
    ``other(rate)``, both growing with the rate: 0 when Podium never costs less, ``inf``
    when it always does up to ``most``. Found by halving, to within 0.1 %."""
    if podium(0.0) >= other(0.0):
        return 0.0
    if podium(most) < other(most):
        return math.inf
    low, high = 0.0, most
    while high - low > max(1e-6, low * 1e-3):
        middle = (low + high) / 2
        low, high = (middle, high) if podium(middle) < other(middle) else (low, middle)
    return low
