"""The data-access layer: every DynamoDB (and SNS) call of the service, one module per
aggregate, the item schema in ``schema``, the client plumbing in ``client``. It takes and
returns the records of ``podium.models`` and plain values; it computes no key the domain
owns (shards, sort keys, expiries come in ready) and imports no domain module."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from podium.config import Settings
from podium.dal.client import Tables

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from podium.dal.audit import Audit
    from podium.dal.boards import Boards
    from podium.dal.eventlog import EventLog
    from podium.dal.index import RankIndex
    from podium.dal.members import Members
    from podium.dal.reshards import Reshards
    from podium.dal.results import Results
    from podium.dal.snapshots import Snapshots
    from podium.dal.social import Social
    from podium.dal.structures import RankStructures
    from podium.dal.tree import CountTree


class Database:
    """Every repository of one table. Each is made, and its module imported, when it is
    first used: a function's cold start imports only the repositories its route uses
    (docs/cold-start.md); ``boto3`` comes with ``client``, in Lambda's init phase."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    @classmethod
    def connect(cls, settings: Settings, client: DynamoDBClient | None = None) -> Database:
        return cls(Tables(settings, client))

    def __repr__(self) -> str:
        return f"Database({self.tables.settings.table_name!r})"

    @cached_property
    def boards(self) -> Boards:
        from podium.dal.boards import Boards

        return Boards(self.tables)

    @cached_property
    def members(self) -> Members:
        from podium.dal.members import Members

        return Members(self.tables)

    @cached_property
    def index(self) -> RankIndex:
        from podium.dal.index import RankIndex

        return RankIndex(self.tables)

    @cached_property
    def structures(self) -> RankStructures:
        from podium.dal.structures import RankStructures

        return RankStructures(self.tables)

    @cached_property
    def social(self) -> Social:
        from podium.dal.social import Social

        return Social(self.tables)

    @cached_property
    def eventlog(self) -> EventLog:
        from podium.dal.eventlog import EventLog

        return EventLog(self.tables)

    @cached_property
    def snapshots(self) -> Snapshots:
        from podium.dal.snapshots import Snapshots

        return Snapshots(self.tables)

    @cached_property
    def audit(self) -> Audit:
        from podium.dal.audit import Audit

        return Audit(self.tables)

    @cached_property
    def tree(self) -> CountTree:
        from podium.dal.tree import CountTree

        return CountTree(self.tables)

    @cached_property
    def results(self) -> Results:
        from podium.dal.results import Results

        return Results(self.tables)

    @cached_property
    def reshards(self) -> Reshards:
        from podium.dal.reshards import Reshards

        return Reshards(self.tables)
