"""Finding one job: by job id first, then by a literal job_key prefix."""

from __future__ import annotations

import pyarrow as pa
import pytest

from iosight._errors import IosightError
from iosight.warehouse import find_job
from iosight.warehouse._summary import _may_be_jobid

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


def test_a_key_skips_the_scan_of_integer_job_ids_and_reads_the_key_index(jobs):
    """A key (letters) cannot be an integer job id read as text: no job id is scanned
    for it; a served reader (``key_index``) finds it from the files that hold it."""
    assert not _may_be_jobid(jobs, "jobs", KEYS[2]) and _may_be_jobid(jobs, "jobs", "77")
    jobs.key_index = True
    assert [find_job(jobs, k) for k in KEYS] == KEYS
    assert find_job(jobs, "123456") == KEYS[1] and find_job(jobs, KEYS[0][:7]) == KEYS[0]


def test_a_job_id_of_text_is_found_though_it_is_no_number(warehouse):
    job = {"job_key": ["a" * 32], "jobid": ["slurm-7b"], "start_time": [1.0]}
    warehouse.commit({"jobs": [pa.table(job)]})
    assert _may_be_jobid(warehouse, "jobs", "slurm-7b")
    assert find_job(warehouse, "slurm-7b") == "a" * 32


def test_a_whole_key_of_any_length_is_found_in_the_table_named(warehouse):
    """``sim_jobs`` holds jobs of codings files, keyed by their own short names."""
    sim_jobs = pa.table({"job_key": ["j1", "j10"], "jobid": pa.array([None, 5], pa.int64())})
    warehouse.commit({"sim_jobs": [sim_jobs]})
    assert find_job(warehouse, "j1", table="sim_jobs") == "j1"
    assert find_job(warehouse, "5", table="sim_jobs") == "j10"
    with pytest.raises(IosightError, match="no job with id or key 'j2' in sim_jobs"):
        find_job(warehouse, "j2", table="sim_jobs")
    with pytest.raises(IosightError, match="run this first"):
        find_job(warehouse, "j1", hint="run this first")  # no jobs table yet


def _summary_of(log_name: str):
    """The summary of one PyDarshan example log (real data) and its POSIX records' ranks."""
    from iosight.data import example_logs
    from iosight.warehouse import job_summary, log_warehouse

    log = next(p for p in example_logs() if p.name == log_name)
    with log_warehouse(log) as wh:
        key = wh.sql("select job_key from jobs")["job_key"][0]
        return job_summary(wh, key), wh.sql("select rank from posix")["rank"]


def test_a_shared_record_counts_all_the_jobs_ranks():
    """Darshan keeps a file every rank opened as one record of rank -1: 2048 ranks, not 1."""
    s, ranks = _summary_of("example.darshan")
    assert list(ranks) == [-1] and s.job["nprocs"] == 2048
    assert list(s.files["ranks"]) == [2048]
    assert len(s.osts) == 24 and set(s.osts["ranks"]) == {2048}
    for table in (s.files, s.osts):
        assert table["io_time_per_rank"].tolist() == (table["io_time"] / 2048).tolist()


def test_per_rank_records_count_one_rank_each():
    s, ranks = _summary_of("sample-badost.darshan")  # file per process, 2048 ranks
    assert (ranks >= 0).all() and set(s.files["ranks"]) == {1}
    assert s.files["ranks"].sum() == len(ranks)
    assert (s.files["io_time_per_rank"] == s.files["io_time"]).all()


def test_modules_show_the_mean_io_time_per_rank_beside_the_sum():
    s, _ = _summary_of("ior_hdf5_example.darshan")
    m = s.modules.set_index("module")
    total = m["read_time"] + m["write_time"] + m["meta_time"]
    assert (m["io_time"] == total).all()
    assert (m["io_time_per_rank"] == total / s.job["nprocs"]).all() and s.job["nprocs"] == 4


def test_a_summary_finds_its_job_by_id_key_or_prefix_alike(jobs):
    """job_summary reads a whole key's row at once (no job id can be it) and otherwise
    finds the job first: the same job either way, an id still before a key's digits."""
    from iosight.warehouse import job_summary

    for ident, want in (("123456", KEYS[1]), (KEYS[1], KEYS[1]), (KEYS[0][:7], KEYS[0]),
                        ("77", KEYS[2]), (KEYS[2], KEYS[2])):  # fmt: skip
        for rows in (False, True):
            job = job_summary(jobs, ident, rows=rows).job
            assert job["job_key"] == want
    with pytest.raises(IosightError, match="no job with id or key 'f' "):
        job_summary(jobs, "f")
