"""The public data sets iosight's workflows and reports use, pinned file by file.

Every file has a URL at a fixed commit of its public source repository and a sha256
(``registry.csv`` beside this module); a download whose hash differs is refused.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DataFile:
    """One file: its path inside the data directory, hash and pinned upstream location.

    ``path``: its path inside the data set's folder; ``sha256``: its pinned hash; ``repo``: the
    GitHub repository holding it; ``commit``: the pinned commit; ``upstream_path``: its path in
    that repository.
    """

    path: str
    sha256: str
    repo: str
    commit: str
    upstream_path: str

    @property
    def url(self) -> str:
        """Where the file is fetched from: its upstream path at the pinned commit."""
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.upstream_path}"


@dataclass(frozen=True)
class DataSet:
    """A named data set: a folder of the data directory and what uses it.

    ``name``: the name ``iosight data fetch`` takes; ``folder``: its folder in the data
    directory; ``description``: what it is; ``used_by``: what reads it; ``files``: its files.
    """

    name: str
    folder: str
    description: str
    used_by: str
    files: tuple[DataFile, ...] = ()


_SETS = (
    DataSet(
        "summit-2021",
        "summit_darshan_total_2021",
        "OLCF Summit 2021 Darshan job totals, 53,546 jobs of 25 applications (Karimi et al.)",
        "iosight ingest (job-total tables), timeline, bursts",
    ),
    DataSet(
        "tokio-abc",
        "tokio_abc_year_in_life",
        "TOKIO-ABC 'A Year in the Life of a Parallel File System' summaries (Cori, Edison, Mira)",
        "iosight perfmodel report --tokio, perfmodel collect --tokio",
    ),
    DataSet(
        "dkrz-codings",
        "dkrz_mistral_bcoding_100k",
        "DKRZ Mistral job I/O codings, 100,000 jobs (Betke & Kunkel)",
        "iosight similarity import-codings, similarity report --codings",
    ),
    DataSet(
        "forge-bandwidth",
        "bez_forge_io_forwarding_bandwidth",
        "FORGE I/O-forwarding bandwidth per number of I/O nodes, MareNostrum 4 and Santos Dumont",
        "iosight iosched experiment --dataset io-nodes, iosched report",
    ),
    DataSet(
        "aiio-logs",
        "aiio_cori_logs",
        "14 real Darshan 3.x logs from NERSC Cori, AIIO case studies (Dong, Bez, Byna)",
        "iosight ingest, job, similarity series (real logs beyond PyDarshan's examples)",
    ),
)


def _load() -> dict[str, DataSet]:
    with open(Path(__file__).with_name("registry.csv"), newline="") as fh:
        files = [DataFile(**row) for row in csv.DictReader(fh)]
    out = {}
    for ds in _SETS:
        mine = tuple(f for f in files if f.path.split("/", 1)[0] == ds.folder)
        out[ds.name] = DataSet(ds.name, ds.folder, ds.description, ds.used_by, mine)
    return out


DATASETS: dict[str, DataSet] = _load()
