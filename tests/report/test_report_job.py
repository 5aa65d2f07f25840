from iosight.data import example_logs
from iosight.report.job import plot_job
from iosight.warehouse import job_summary


def test_job_figure_for_dxt_and_plain_logs(example_warehouse, tmp_path):
    warehouse = example_warehouse
    logs = "source_path like '%/dxt.darshan' or source_path like '%/noposix.darshan'"
    jobids = warehouse.sql(f"select jobid from jobs where {logs}")["jobid"]
    assert len(jobids) == 2
    for jobid in jobids:
        out = plot_job(warehouse, job_summary(warehouse, str(jobid)), tmp_path / f"{jobid}.png")
        assert out.stat().st_size > 10_000
        assert out.read_bytes()[:4] == b"\x89PNG"


def test_dxt_panel_plots_every_segment_of_the_job_among_many_others(example_warehouse):
    """Every segment of the job, drawn one by one when they are few, counted per rank
    bin and time bin when they are more than the panel's points: none left out."""
    import numpy as np
    from matplotlib.figure import Figure

    from iosight.report import job as job_report

    warehouse = example_warehouse
    counts = warehouse.sql("select job_key, count(*) n from dxt_posix group by 1 order by 2")
    key, n = counts["job_key"][0], int(counts["n"][0])  # the job with the fewest segments
    others = int(counts["n"].sum()) - n
    assert others > 10 * n  # the table is mostly other jobs' segments
    ax = Figure().subplots()
    job_report._timeline(ax, warehouse, key, max_points=n)
    plotted = sum(len(c.get_segments()) for c in ax.collections)
    assert plotted == n
    assert f"all {n:,} segments" in ax.get_title()

    big, n_big = counts["job_key"].iloc[-1], int(counts["n"].iloc[-1])
    ax = Figure().subplots()
    job_report._timeline(ax, warehouse, big, max_points=n)  # fewer points than segments
    (image,) = ax.images
    cells = image.get_array()
    assert np.isfinite(cells).sum() <= n and np.nansum(cells) == n_big
    assert f"{n_big:,} segments, counted per" in ax.get_title()


def test_a_figure_path_is_checked_before_drawing(tmp_path):
    import pytest

    from iosight._errors import IosightError
    from iosight.report.job import check_figure_path

    assert check_figure_path(tmp_path / "a.SVG") == tmp_path / "a.SVG"
    with pytest.raises(IosightError, match="name a .png, .svg or .pdf file"):
        check_figure_path(tmp_path / "a")
    with pytest.raises(IosightError, match="no folder"):
        check_figure_path(tmp_path / "no" / "a.png")


def test_the_files_panel_labels_each_file_with_its_ranks_and_mean_per_rank():
    """A file shared by all 2048 ranks (one record of rank -1) is labelled 2048 ranks, and
    the sum over ranks on the axis gets its mean per rank beside it, in human units."""
    from matplotlib.figure import Figure

    from iosight._units import human_duration
    from iosight.report import job as job_report
    from iosight.warehouse import log_warehouse

    log = next(p for p in example_logs() if p.name == "example.darshan")
    with log_warehouse(log) as wh:
        s = job_summary(wh, "4478544")
    fig = Figure()
    ax = fig.subplots()
    job_report._top_files(ax, s)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.texts]
    mean = s.files["io_time"].iloc[0] / 2048
    assert labels == [f"{human_duration(mean)} per rank, 2048 ranks"]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert "0 s" in ticks and any(" h" in t for t in ticks)
    assert not any("e+" in t or "1e" in t for t in ticks)
