"""Synthetic monitoring jobs: parameter checks (generation is tested in tests/similarity)."""

import pytest

from iosight._errors import IosightError
from iosight.synth.monitoring import MAX_JOBS, generate_monitoring


@pytest.mark.parametrize("job_count", [0, MAX_JOBS + 1, 10_000_000_000_000])
def test_job_counts_past_the_bound_are_refused(job_count):
    with pytest.raises(IosightError, match="job_count"):
        generate_monitoring(job_count)


def test_negative_seed_is_refused():
    with pytest.raises(IosightError, match="seed"):
        generate_monitoring(2, seed=-1)


def test_raw_samples_must_be_named_parquet(tmp_path):
    with pytest.raises(IosightError, match="name a .parquet file"):
        generate_monitoring(2, samples_path=tmp_path / "raw.txt")
    assert not (tmp_path / "raw.txt").exists()
