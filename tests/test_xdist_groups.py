"""The test run's layout (tests/conftest.py): tests that share a module-scoped fixture or a chaos run stay on one
pytest-xdist worker (``--dist loadgroup`` and ``xdist_group`` marks), or the fixture (a Spark campaign, a real
cluster, a chaos run of a minute) is made once per worker. pytest 9.2 with pytest-xdist 3.8.0 ignored every
mark without a word (pyproject.toml pins pytest below 9.2 for that reason): this test fails when the marks
stop reaching the scheduler."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def made_once_per_module() -> int:
    return os.getpid()


@pytest.mark.parametrize("i", range(2))
def test_tests_sharing_a_module_fixture_carry_its_group_into_the_scheduler(made_once_per_module, i, request):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("not under pytest-xdist (-n 0): no scheduler to group for")
    # the worker's scheduler groups by the "@group" suffix pytest-xdist appends to the node id
    assert request.node.nodeid.endswith("@module-fixture:test_xdist_groups"), request.node.nodeid
    assert made_once_per_module == os.getpid()


@pytest.mark.xdist_group("explicit-probe")
def test_an_explicit_xdist_group_mark_reaches_the_scheduler(request):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("not under pytest-xdist (-n 0): no scheduler to group for")
    assert request.node.nodeid.endswith("@explicit-probe"), request.node.nodeid
