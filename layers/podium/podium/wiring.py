"""Wiring: builds the service's objects once per process (a Lambda instance keeps them
between invocations) and hands each function what its route needs. Each piece is built on
first use and imports only its own modules, so that a handler's cold start pays for its
route alone (the data-access package, and boto3 with it, is imported with the module, so
that Lambda's init phase pays for it). ``reset()`` forgets them all (tests that change the
environment)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from functools import cache, cached_property
from typing import TYPE_CHECKING

from podium.boards import BoardService, Clock, system_clock
from podium.config import settings
from podium.dal import Database
from podium.layouts import Timing  # boto3 with it: in Lambda's init phase, not the first request

if TYPE_CHECKING:
    from podium.bands import ScoreBands
    from podium.consistency import Checker
    from podium.dal.publisher import SnsPublisher
    from podium.maintenance import Maintenance
    from podium.members import MemberService
    from podium.ports import Announcer, Publisher, Repositories
    from podium.reads import ReadService
    from podium.resharding import ReshardService
    from podium.results import PeriodResults
    from podium.snapshots import SnapshotService
    from podium.social import SocialService
    from podium.stream.aggregate import Aggregator
    from podium.stream.fold import Folder
    from podium.stream.notify import Notifier


@dataclass
class Services:
    """Every room of the domain over one set of repositories and one clock."""

    db: Repositories
    clock: Clock = system_clock

    @cached_property
    def boards(self) -> BoardService:
        config = settings()
        timing = Timing(
            timedelta(seconds=config.layout_cache_seconds), timedelta(seconds=config.reshard_margin_seconds)
        )
        return BoardService(self.db.boards, self.clock, timing)

    @cached_property
    def members(self) -> MemberService:
        from podium.members import MemberService

        return MemberService(self.boards, self.db.members, self.db.eventlog, self.db.social)

    @cached_property
    def reads(self) -> ReadService:
        from podium.reads import ReadService

        db, keep = self.db, settings().read_cache_seconds
        return ReadService(self.boards, db.boards, db.members, db.index, db.tree, keep_seconds=keep)

    @cached_property
    def bands(self) -> ScoreBands:
        from podium.bands import ScoreBands

        return ScoreBands(self.reads)

    @cached_property
    def resharding(self) -> ReshardService:
        from podium.resharding import ReshardService

        return ReshardService(self.boards, self.db.reshards, self.db.index)

    @cached_property
    def social(self) -> SocialService:
        from podium.social import SocialService

        return SocialService(self.boards, self.db.members, self.db.social)

    @cached_property
    def maintenance(self) -> Maintenance:
        from podium.maintenance import Maintenance

        db = self.db
        return Maintenance(self.boards, db.structures, db.index, db.tree, db.members)

    @cached_property
    def checker(self) -> Checker:
        from podium.consistency import Checker

        db = self.db
        return Checker(
            self.boards, self.members, self.maintenance, db.members, db.structures, db.tree, db.audit
        )

    @cached_property
    def aggregator(self) -> Aggregator:
        from podium.stream.aggregate import Aggregator

        return Aggregator(self.db, self.boards.settings, self.clock)

    @cached_property
    def folder(self) -> Folder:
        from podium.stream.fold import Folder

        return Folder(self.db.members, self.db.eventlog, self.boards.settings, self.clock)

    @cached_property
    def snapshots(self) -> SnapshotService:
        from podium.snapshots import SnapshotService

        return SnapshotService(self)

    def period_results(self, publisher: Announcer) -> PeriodResults:
        from podium.results import PeriodResults

        return PeriodResults(self, publisher)

    def notifier(self, publisher: Publisher) -> Notifier:
        from podium.stream.notify import Notifier

        chunk = settings().fanout_chunk_size
        return Notifier(
            self.db.social, self.db.members, self.db.index, publisher, self.boards.settings, chunk
        )


@cache
def services() -> Services:
    """The process's services, on the table the environment names."""
    return Services(Database.connect(settings()))


@cache
def notifier() -> Notifier:
    """The notifier, publishing to the stack's topic."""
    from podium.dal.publisher import SnsPublisher

    return services().notifier(SnsPublisher(settings().notification_topic))


@cache
def announcer() -> SnsPublisher:
    """The period results job's publisher: notifications and periodClosed, to the topic."""
    from podium.dal.publisher import SnsPublisher

    return SnsPublisher(settings().notification_topic)


def reset() -> None:
    """Forget every object built, and the settings they were built from."""
    from podium import cursorkeys, identity

    for built in (services, notifier, announcer, settings, identity.verifier):
        built.cache_clear()
    cursorkeys.reset()
