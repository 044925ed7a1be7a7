"""Integration fixtures: the real service and store, on DynamoDB Local."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from podium.config import Settings
from podium.dal import Database
from podium.wiring import Services
from tests.helpers import Metered, TableStream, TickingClock, small_head

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def store(local_tables: Settings, dynamodb_client: Any) -> Database:
    return Database.connect(local_tables, client=dynamodb_client)


@pytest.fixture
def service(store: Database) -> Services:
    return Services(store, clock=TickingClock())


@pytest.fixture
def table_stream(local_tables: Settings, dynamodb_client: Any, dynamodb_endpoint: str) -> TableStream:
    """The shared table's stream records written since the test began (``records()``)."""
    return TableStream(dynamodb_client, dynamodb_endpoint, local_tables.table_name)


@pytest.fixture
def metered(dynamodb_endpoint: str, local_tables: Settings) -> Metered:
    """The service on a client of its own whose every request is recorded."""
    return Metered(dynamodb_endpoint, local_tables)


@pytest.fixture
def head_in_small_sizes() -> Iterator[None]:
    """The head and ladder in small sizes (``tests.helpers.small_head``)."""
    with small_head():
        yield
