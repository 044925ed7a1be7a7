"""Integration fixtures: the real service and store, on DynamoDB Local."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from devstack import template as template_module
from devstack.stack import create_tables
from podium.config import Settings
from podium.dal import Database
from podium.wiring import Services
from tests.helpers import Metered, TableStream, TickingClock, small_head

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def module_database() -> Iterator[str]:
    """Each integration module in a database of its own, in the worker's DynamoDB Local:
    without ``-sharedDb`` DynamoDB Local keeps a database per access key id, so the module
    runs under a fresh key id (the environment's, which every boto3 client made meanwhile
    takes), and the key of the session comes back after it. A write to a table with a
    stream slows with every stream record of its database: one database for the whole
    session made the last modules' writes 50 times slower than the first ones'
    (``tests.conftest.OwnDatabase``). Its tables are deleted after the module."""
    import boto3

    before = os.environ["AWS_ACCESS_KEY_ID"]
    key = f"it{uuid.uuid4().hex[:12]}"
    os.environ["AWS_ACCESS_KEY_ID"] = key
    boto3.DEFAULT_SESSION = None  # it caches the credentials it found first
    try:
        yield key
    finally:
        os.environ["AWS_ACCESS_KEY_ID"] = before
        boto3.DEFAULT_SESSION = None


@pytest.fixture(scope="module")
def dynamodb_client(module_database: str, dynamodb_endpoint: str) -> Iterator[Any]:
    """A client of the module's database (``module_database``); its tables are deleted after
    the module."""
    import boto3

    client = boto3.client("dynamodb", endpoint_url=dynamodb_endpoint)
    yield client
    for page in client.get_paginator("list_tables").paginate():
        for table in page["TableNames"]:
            client.delete_table(TableName=table)


@pytest.fixture(scope="module")
def local_tables(dynamodb_client: Any) -> Settings:
    """The template's tables in the module's database, under a prefix of their own."""
    spec = template_module.read(f"it{uuid.uuid4().hex[:8]}-")
    create_tables(dynamodb_client, spec)
    return spec.settings()


@pytest.fixture(scope="module")
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
