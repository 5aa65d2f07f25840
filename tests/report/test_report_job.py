from iosight.demo.step_10_characterization import example_logs
from iosight.report.job import plot_job
from iosight.warehouse import ingest, job_summary


def test_job_figure_for_dxt_and_plain_logs(warehouse, tmp_path):
    logs = [p for p in example_logs() if p.name in ("dxt.darshan", "noposix.darshan")]
    ingest(logs, warehouse, workers=1)
    for jobid in warehouse.sql("select jobid from jobs")["jobid"]:
        out = plot_job(warehouse, job_summary(warehouse, str(jobid)), tmp_path / f"{jobid}.png")
        assert out.stat().st_size > 10_000
        assert out.read_bytes()[:4] == b"\x89PNG"
