"""The per-file frame the record rules read (``_frame.load``): which rank it names, and
the names it gives, whatever the order DuckDB reads the records in."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from iosight.insights._frame import load
from iosight.insights._thresholds import Thresholds
from iosight.warehouse import Warehouse

BIG = 2**62  # bytes near BIGINT's top: the rank order must not overflow


def _warehouse(path) -> Warehouse:
    """One job: record 7 written by ranks 4, 3, 2, 1, 0 (in that row order) with ties
    at the most and the least bytes, and a shared row (rank -1) that outweighs them;
    record 8 read by ranks 2 and 1 alike, with no name stored."""
    ranks = [4, 3, 2, 1, 0, -1, 2, 1]
    posix = {
        "job_key": ["j"] * 8,
        "rank": ranks,
        "record_id": pa.array([7] * 6 + [8] * 2, pa.uint64()),
        "POSIX_BYTES_WRITTEN": [2, 9, BIG, BIG, 2, BIG + 5, 0, 0],
        "POSIX_BYTES_READ": [0, 0, 0, 0, 0, 0, 5, 5],
    }
    wh = Warehouse(path, create=True)
    wh.commit({
        "jobs": [pa.table({"job_key": ["j"], "jobid": ["1"], "exe": ["a.out"], "uid": [1],
                           "nprocs": [5], "start_time": [1.6e9], "run_time": [60.0],
                           "source_format": ["darshan"], "modules": ["POSIX"]})],
        "posix": [pa.table(posix)],
        "names": [pa.table({"job_key": ["j"], "record_id": pa.array([7], pa.uint64()),
                            "name": ["/scratch/out"]})],
    })  # fmt: skip
    return wh


def test_tied_ranks_name_the_lowest_and_names_fall_back_to_the_record(tmp_path):
    files = load(_warehouse(tmp_path / "wh"), ["j"], Thresholds()).files
    assert files["record_id"].tolist() == [7, 8]
    assert files["name"].tolist() == ["/scratch/out", "8"]
    assert files["rank_written_most"].tolist()[0] == 1  # ranks 2 and 1 wrote 2**62
    assert files["rank_written_least"].tolist()[0] == 0  # ranks 4 and 0 wrote 2
    assert files["rank_read_most"].tolist()[1] == files["rank_read_least"].tolist()[1] == 1
    assert files["rank_written_max"].tolist()[0] == float(BIG)
    assert np.asarray(files["shared"], bool).tolist() == [True, False]
