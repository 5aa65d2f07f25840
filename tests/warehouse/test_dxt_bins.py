"""``dxt_bins`` (iosight.warehouse._dxt_bins): a job's bins the same however its
segments come in pieces."""

from __future__ import annotations

import pytest

from iosight.darshan import read_source
from iosight.data import example_logs
from iosight.warehouse._dxt_bins import DxtBins


@pytest.fixture(scope="module")
def dxt_log():
    """PyDarshan's real ``dxt.darshan``: 7,623 POSIX segments over 1,469 s."""
    (path,) = [p for p in example_logs() if p.name == "dxt.darshan"]
    _, log = read_source(path)
    return log.tables["jobs"], log.tables["dxt_posix"]


@pytest.mark.parametrize("cuts", [[1000], [1, 4000, 7000]])
def test_one_piece_bins_equal_the_bins_of_several_pieces(dxt_log, cuts):
    """A job read in one piece keeps that piece's sums (no second grouping); a job read
    in several sums its pieces' bins: the same rows (their order within a job is
    Arrow's grouping's, and no reader depends on it)."""
    jobs, segments = dxt_log
    whole, pieces = DxtBins(jobs), DxtBins(jobs)
    whole.add(segments)
    assert len(whole.parts) == 1
    for lo, hi in zip([0, *cuts], [*cuts, segments.num_rows], strict=True):
        pieces.add(segments.slice(lo, hi - lo))
    assert len(pieces.parts) == len(cuts) + 1
    one, several = whole.table(), pieces.table()
    assert one.num_rows > 10 and one["ops"].to_pylist() != [1] * one.num_rows
    assert sum(one["ops"].to_pylist()) == segments.num_rows
    by = [("rank", "ascending"), ("bin", "ascending")]
    assert one.sort_by(by).equals(several.sort_by(by)), "same rows, same types"
