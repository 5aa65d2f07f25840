"""The traced workloads of ``insights_workloads``, once per test module."""

from __future__ import annotations

import pytest

from insights_workloads import trace_and_ingest


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    return trace_and_ingest(tmp_path_factory.mktemp("traced"))
