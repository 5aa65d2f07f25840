"""A small emulator that checks Algorithm 1's run-time estimate on a real workload (Fig. 9).

The paper runs DLIO while injecting background load in the bins a sampled burst pattern
marks, and compares the measured run time with the algorithm's estimate. iosight does the
same on the local machine with scaled-down bins (seconds instead of 5 minutes):

- the *job* is an I/O-bound program (a child process) that writes a fixed amount of data
  in 1 MiB chunks, each followed by ``fsync``, cycling over a bounded file;
- the *bursts* are background writer processes that write 4 MiB chunks to their own
  bounded files with an ``fsync`` every 16 MiB (large flushes that stall the job's
  ``fsync`` calls, as a busy shared file system does), switched on during the bins
  that the pattern (from the chosen start onward) marks as bursts, and in every bin
  past the pattern (Algorithm 1's worst case);
- ``min_time`` and ``max_time`` are measured first: the job alone, and with the writers
  on all along; the job's size is set so that it runs about ``job_bins`` bins alone.

Everything lives in a :class:`tempfile.TemporaryDirectory` that is removed on every exit
path, and the files are bounded (``job_file_mb + writers * writer_file_mb`` <= 256 MiB).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param
from iosight._progress import Progress, ensure_progress
from iosight.schedule._algorithm import POLICIES, choose_start, parse_pattern

if TYPE_CHECKING:
    import pandas as pd

_MIB = 1 << 20
#: Upper bound on the bytes the emulator keeps on disk at once.
MAX_FILE_MB = 256

#: Six 24-bin patterns in the spirit of Fig. 9 (bursts early, late, repeated, long).
DEFAULT_PATTERNS: tuple[str, ...] = (
    "110000000000000000000000",
    "011100000000000000000000",
    "000110000000000000000000",
    "101010000000000000000000",
    "111111000000000000000000",
    "000000000000000000000011",
)


@dataclass(frozen=True, kw_only=True)
class EmulatorConfig:
    """Settings of :func:`emulate` (every size in MiB, every time in seconds).

    Attributes
    ----------
    bin_s : float
        Scaled bin length (the paper's 300 s).
    job_bins : float
        Target run time of the job alone, in bins (DLIO: 850 / 300 = 2.8).
    writers : int
        Background writer processes switched on in burst bins.
    job_file_mb, writer_file_mb : int
        Size of the file each process cycles over.
    repeats : int
        Runs averaged (median) to measure ``min_time`` and ``max_time``.
    seed : int
        Seed of the written bytes.
    directory : Path, optional
        Where the temporary directory is made (default: the system's).
    """

    bin_s: float = 1.0
    job_bins: float = 2.8
    writers: int = 1
    job_file_mb: int = 32
    writer_file_mb: int = 64
    repeats: int = 3
    seed: int = 0
    directory: Path | None = None

    def validate(self) -> None:
        """Refuse settings the emulator cannot run in bounded time and disk (one clear error)."""
        check_param("bin_s", self.bin_s, 0.05 <= self.bin_s <= 60, "between 0.05 and 60 s")
        check_param("job_bins", self.job_bins, 0.5 <= self.job_bins <= 10, "between 0.5 and 10")
        check_param("writers", self.writers, 1 <= self.writers <= 4, "between 1 and 4")
        check_param("repeats", self.repeats, 1 <= self.repeats <= 5, "between 1 and 5")
        check_param("job_file_mb", self.job_file_mb, self.job_file_mb >= 1, "at least 1")
        check_param("writer_file_mb", self.writer_file_mb, self.writer_file_mb >= 1, "at least 1")
        total = self.job_file_mb + self.writers * self.writer_file_mb
        check_param(
            "job_file_mb + writers * writer_file_mb",
            total,
            total <= MAX_FILE_MB,
            f"at most {MAX_FILE_MB} MiB",
        )
        if self.directory is not None and not Path(self.directory).is_dir():
            raise IosightError(f"emulator directory {self.directory} is not a directory")


#: Background writers: chunk size and chunks between fsyncs.
_WRITER_CHUNK_MB, _WRITER_SYNC_EVERY = 4, 4


def _chunk(seed: int, mb: int = 1) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, mb * _MIB, dtype=np.uint8).tobytes()


def _write_chunk(fh, chunk: bytes, k: int, file_chunks: int, sync: bool) -> None:
    """Write chunk ``k`` of a file cycling over ``file_chunks`` chunks; fsync if asked."""
    if k % file_chunks == 0:
        fh.seek(0)
    fh.write(chunk)
    if sync:
        fh.flush()
        os.fsync(fh.fileno())


def _job(path: str, work_mb: int, file_mb: int, seed: int, conn) -> None:
    """The I/O-bound program: ``work_mb`` chunks written and fsynced; sends its run time."""
    chunk = _chunk(seed)
    start = time.perf_counter()
    with open(path, "wb") as fh:
        for k in range(work_mb):
            _write_chunk(fh, chunk, k, file_mb, sync=True)
    conn.send(time.perf_counter() - start)
    conn.close()


def _writer(path: str, file_mb: int, seed: int, on, stop) -> None:
    """Background load: writes while ``on`` is set, until ``stop`` is set."""
    chunk = _chunk(seed, _WRITER_CHUNK_MB)
    file_chunks = max(1, file_mb // _WRITER_CHUNK_MB)
    k = 0
    with open(path, "wb") as fh:
        while not stop.is_set():
            if not on.wait(timeout=0.02):
                continue
            k += 1
            _write_chunk(fh, chunk, k, file_chunks, sync=k % _WRITER_SYNC_EVERY == 0)


class _Bench:
    """The temporary directory, the writer processes and the switch, for one session."""

    def __init__(self, cfg: EmulatorConfig) -> None:
        self.cfg = cfg
        self.ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        self.tmp = tempfile.TemporaryDirectory(prefix="iosight-emulator-", dir=cfg.directory)
        self.dir = Path(self.tmp.name)
        self.on = self.ctx.Event()
        self.stop = self.ctx.Event()
        self.writers = []

    def __enter__(self) -> _Bench:
        try:
            for w in range(self.cfg.writers):
                proc = self.ctx.Process(
                    target=_writer,
                    args=(
                        str(self.dir / f"writer{w}.bin"),
                        self.cfg.writer_file_mb,
                        self.cfg.seed + 1 + w,
                        self.on,
                        self.stop,
                    ),
                    daemon=True,
                )
                proc.start()
                self.writers.append(proc)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.on.clear()
        for proc in self.writers:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
        self.tmp.cleanup()

    def run_job(
        self,
        work_mb: int,
        bursts: Sequence[bool] | None = None,
        *,
        bin_s: float = 1.0,
        always: bool = False,
    ) -> float:
        """Run the job once; writers follow ``bursts`` bins of ``bin_s`` (bursts past its end).

        ``bursts=None`` runs the job alone, or with the writers on all along if ``always``.
        """
        parent, child = self.ctx.Pipe(duplex=False)
        job = self.ctx.Process(
            target=_job,
            args=(str(self.dir / "job.bin"), work_mb, self.cfg.job_file_mb, self.cfg.seed, child),
            daemon=True,
        )

        def switch(k: int) -> None:
            burst = always if bursts is None else (k >= len(bursts) or bool(bursts[k]))
            if burst:
                self.on.set()
            else:
                self.on.clear()

        switch(0)
        job.start()
        child.close()
        t0 = time.monotonic()
        try:
            k = 0
            while True:
                job.join(timeout=max(0.0, t0 + (k + 1) * bin_s - time.monotonic()))
                if not job.is_alive():
                    break
                k += 1
                switch(k)
        finally:
            self.on.clear()
            if job.is_alive():
                job.terminate()
            job.join()
        if job.exitcode != 0 or not parent.poll():
            raise IosightError(f"the emulated job failed (exit code {job.exitcode})")
        return float(parent.recv())


@dataclass
class EmulationResult:
    """Measured and estimated run times of the emulated job (Fig. 9).

    Attributes
    ----------
    runs : DataFrame
        One row per pattern and distinct chosen start: ``pattern, policies`` (those that
        chose it), ``option, delay_s, est_bins_s, est_fractional_s, measured_s, err_bins,
        err_fractional`` (relative errors of the two estimators).
    min_time, max_time : float
        Measured run time alone and with the writers on all along (seconds).
    bin_s : float
        The bin length used: ``min_time / job_bins``, so the job spans the same share of
        a bin as DLIO's 850 s of a 300-s bin.
    work_mb : int
        MiB the job writes.
    load_average : tuple of float
        The machine's 1, 5 and 15 minute load averages at the end (other users' work
        is noise in the measurements).
    alone_runs, loaded_runs : tuple of float
        The calibration runs behind ``min_time`` and ``max_time``; their spread is the
        noise floor of the comparison.
    config : dict
        The :class:`EmulatorConfig` the emulation ran with.
    """

    runs: pd.DataFrame
    min_time: float
    max_time: float
    bin_s: float
    work_mb: int
    load_average: tuple[float, ...]
    alone_runs: tuple[float, ...] = ()
    loaded_runs: tuple[float, ...] = ()
    config: dict = field(default_factory=dict)

    def within(self) -> pd.DataFrame:
        """Share of runs whose estimate is within 10% and 20% of the measured run time."""
        import pandas as pd

        rows = []
        for est in ("bins", "fractional"):
            err = self.runs[f"err_{est}"].abs()
            rows.append(
                {
                    "estimator": est,
                    "runs": len(err),
                    "within_10pct": float((err <= 0.10).mean()),
                    "within_20pct": float((err <= 0.20).mean()),
                    "mean_abs_err": float(err.mean()),
                }
            )
        return pd.DataFrame(rows)


def emulate(
    patterns: Sequence[str | Sequence[int]] = DEFAULT_PATTERNS,
    config: EmulatorConfig | None = None,
    policies: Sequence[str] = tuple(POLICIES),
    *,
    progress: Progress | None = None,
) -> EmulationResult:
    """Run a real I/O-bound job under emulated bursts and compare with Algorithm 1.

    The job is sized from a probe to run about ``job_bins`` bins of ``bin_s`` alone; its
    ``min_time`` (alone) and ``max_time`` (writers on all along) are then measured, and
    the bin used is ``L = min_time / job_bins``. For each pattern and policy Algorithm 1
    picks a start option; the job is run once per distinct option with the writers
    following the pattern from that option on, and its run time is measured. The start
    delay itself is not waited out.

    ``patterns``: burst patterns, one 0/1 per bin; ``config``: the emulator's settings (default:
    :class:`EmulatorConfig`); ``policies``: the policies whose choices are run; ``progress``:
    told of each run (default: silent).

    References
    ----------
    .. [1] Saeedizade, Taheri, Arslan, §V-B, Fig. 9 (estimated vs actual DLIO run times).
    """
    import pandas as pd

    cfg = config or EmulatorConfig()
    cfg.validate()
    pats = [parse_pattern(p) for p in patterns]
    if not pats:
        raise IosightError("give at least one pattern to emulate")
    prog = ensure_progress(progress)
    with _Bench(cfg) as bench:
        probe_mb = 64
        rate = probe_mb / max(bench.run_job(probe_mb), 1e-6)  # MiB/s alone
        work_mb = max(1, round(cfg.job_bins * cfg.bin_s * rate))
        prog.start(2 * cfg.repeats, "measuring run time alone and under load")
        alone, loaded = [], []
        for _ in range(cfg.repeats):
            alone.append(bench.run_job(work_mb))
            prog.advance(1)
            loaded.append(bench.run_job(work_mb, always=True))
            prog.advance(1)
        prog.finish()
        min_time = statistics.median(alone)
        max_time = max(statistics.median(loaded), min_time)
        bin_s = min_time / cfg.job_bins
        cases = []  # (pattern, start option, policies choosing it): one measured run each
        for pat in pats:
            chosen: dict[int, list[str]] = {}
            for policy in policies:
                c = choose_start(pat, min_time, max_time, policy=policy, bin_s=bin_s)
                chosen.setdefault(c.index, []).append(policy)
            cases += [(pat, index, names) for index, names in chosen.items()]
        prog.start(len(cases), "emulating bursts (one run per pattern and start option)")
        rows = []
        for pat, index, names in cases:
            est = {
                e: choose_start(pat, min_time, max_time, alpha=0.0, bin_s=bin_s, estimator=e)
                for e in ("bins", "fractional")
            }
            real = bench.run_job(work_mb, pat[index:], bin_s=bin_s)
            bins = float(est["bins"].option_run_time[index])
            frac = float(est["fractional"].option_run_time[index])
            rows.append(
                {
                    "pattern": "".join("1" if b else "0" for b in pat),
                    "policies": ",".join(names),
                    "option": index,
                    "delay_s": index * bin_s,
                    "est_bins_s": bins,
                    "est_fractional_s": frac,
                    "measured_s": real,
                    "err_bins": (bins - real) / real,
                    "err_fractional": (frac - real) / real,
                }
            )
            prog.advance(1)
        prog.finish()
    cfg_dict = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}
    return EmulationResult(
        runs=pd.DataFrame(rows),
        min_time=float(min_time),
        max_time=float(max_time),
        bin_s=float(bin_s),
        work_mb=int(work_mb),
        load_average=tuple(round(x, 2) for x in os.getloadavg()),
        alone_runs=tuple(alone),
        loaded_runs=tuple(loaded),
        config=cfg_dict,
    )
