"""Finding one job: by job id first, then by a literal job_key prefix."""

from __future__ import annotations

import pyarrow as pa
import pytest

from iosight._errors import IosightError
from iosight.warehouse import find_job

# SYNTHETIC jobs: the first one's key starts with the digits of the second one's id
KEYS = ["123456" + "a" * 26, "f" * 32, "e" * 32 + "-00000000"]


@pytest.fixture
def jobs(warehouse):
    warehouse.commit(
        {
            "jobs": [
                pa.table(
                    {
                        "job_key": KEYS,
                        "jobid": [1, 123456, 77],
                        "exe": ["a", "b", "c"],
                        "start_time": [1.0, 2.0, 3.0],
                    }
                )
            ]
        }
    )
    return warehouse


def test_a_job_id_wins_over_a_key_that_starts_with_its_digits(jobs):
    assert find_job(jobs, "123456") == KEYS[1]
    assert find_job(jobs, "1") == KEYS[0]
    with pytest.raises(IosightError, match="no job with id or key '1234560'"):
        find_job(jobs, "1234560")


def test_key_prefixes_are_literal_and_long_enough(jobs):
    assert find_job(jobs, KEYS[0][:7]) == KEYS[0]  # "123456a": no job id
    assert find_job(jobs, KEYS[2]) == KEYS[2]
    assert find_job(jobs, "e" * 32) == KEYS[2]
    for ident, message in (
        ("", "got an empty one"),
        ("  ", "got an empty one"),
        ("_", "at least 6 characters"),
        ("%", "at least 6 characters"),
        ("fff", "at least 6 characters"),
        ("______", "no job with id or key '______'"),
        ("%%%%%%", "no job with id or key"),
    ):
        with pytest.raises(IosightError, match=message):
            find_job(jobs, ident)
