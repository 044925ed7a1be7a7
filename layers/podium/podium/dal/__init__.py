"""The data-access layer: every DynamoDB (and SNS) call of the service, one module per
aggregate, the item schema in ``schema``, the client plumbing in ``client``. It takes and
returns the records of ``podium.models`` and plain values; it computes no key the domain
owns (shards, sort keys, expiries come in ready) and imports no domain module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from podium.config import Settings
from podium.dal.audit import Audit
from podium.dal.boards import Boards
from podium.dal.client import Tables
from podium.dal.eventlog import EventLog
from podium.dal.index import RankIndex
from podium.dal.members import Members
from podium.dal.reshards import Reshards
from podium.dal.results import Results
from podium.dal.snapshots import Snapshots
from podium.dal.social import Social
from podium.dal.structures import RankStructures
from podium.dal.tree import CountTree

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class Database:
    """Every repository of one table."""

    tables: Tables
    boards: Boards
    members: Members
    index: RankIndex
    structures: RankStructures
    social: Social
    eventlog: EventLog
    snapshots: Snapshots
    audit: Audit
    tree: CountTree
    results: Results
    reshards: Reshards

    @classmethod
    def connect(cls, settings: Settings, client: DynamoDBClient | None = None) -> Database:
        tables = Tables(settings, client)
        return cls(
            tables=tables,
            boards=Boards(tables),
            members=Members(tables),
            index=RankIndex(tables),
            structures=RankStructures(tables),
            social=Social(tables),
            eventlog=EventLog(tables),
            snapshots=Snapshots(tables),
            audit=Audit(tables),
            tree=CountTree(tables),
            results=Results(tables),
            reshards=Reshards(tables),
        )
