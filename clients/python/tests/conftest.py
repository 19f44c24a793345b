"""The live server the tests run against (scripts/test-clients.sh starts it): its URL,
a token with every permission of the app ``clients``, and the database URL for the SQL
API. Tests that need the server are skipped without TASKLANE_URL."""

from __future__ import annotations

import os
import uuid

import pytest

import tasklane


@pytest.fixture
def server() -> dict[str, str]:
    if not os.environ.get("TASKLANE_URL"):
        pytest.skip("no live server: run scripts/test-clients.sh")
    return {
        "url": os.environ["TASKLANE_URL"],
        "token": os.environ["TASKLANE_TOKEN"],
        "database_url": os.environ["TASKLANE_DATABASE_URL"],
        "app": os.environ.get("TASKLANE_APP", "clients"),
    }


@pytest.fixture
def client(server: dict[str, str]):
    with tasklane.Tasklane(server["url"], server["token"]) as c:
        yield c


@pytest.fixture
def scope() -> str:
    """A scope of this test alone."""
    return f"py-{uuid.uuid4()}"
