"""The mmap-backed state file that outlives a killed process, and its recovery.

Darshan 3.1 maps its record buffers onto a file with ``MAP_SHARED`` so that a crash
leaves the data behind, laid out like a log but uncompressed (§III-C). iosight does the
same for each traced process: a header (job facts as JSON), a small table of record
counts, one fixed slot per record of each module in the Darshan record layout, and
the name records appended after the slots as files are first seen.

iosight's reading: Python keeps live counters in Python lists (an mmap write per
counter update would cost more than the I/O it measures), and a background thread
copies every changed record into the map each ``sync_interval`` seconds (0.1 s by
default); a SIGKILL loses at most the last interval's updates, which the kernel still
writes back because the pages are shared.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from pathlib import Path

import numpy as np

from iosight._errors import CorruptLogError
from iosight.trace._format import Job, LogContent, record_dtype
from iosight.trace._process import command_line, mount_table

MAGIC = b"IOSTATE1"
_DYN = 256  # last sync wtime + (count, dropped) per module
_PAGE = 4096
STATE_SUFFIX = ".iosight-state"

# the real calls, captured before any module patches ``os``
_os_open, _os_close, _os_pwrite, _os_ftruncate = os.open, os.close, os.pwrite, os.ftruncate


class StateFile:
    """One process's live state file (writer side)."""

    def __init__(self, path: Path, fd: int, mm: mmap.mmap, layout: dict) -> None:
        self.path, self.fd, self.mm, self.layout = path, fd, mm, layout
        self.names_pos = layout["names_offset"]
        self._seen: dict[tuple[str, int], tuple[float, float]] = {}

    @classmethod
    def create(cls, path: Path, core) -> StateFile:
        """Lay the file out for ``core``'s modules at their record limit and map it."""
        modules = []
        head = {
            "start_ns": core.start_ns,
            "uid": os.getuid(),
            "pid": os.getpid(),
            "rank": core.proc.rank,
            "nprocs": core.proc.nprocs,
            "jobid": core.proc.jobid,
            "metadata": {"lib_ver": "iosight-trace", **core.config.extra_metadata},
        }
        head["exe"], head["mounts"] = core.config.exe or command_line(), mount_table()
        blob = json.dumps(head).encode()
        header_size = -(-(16 + len(blob)) // _PAGE) * _PAGE
        off = header_size + _DYN
        for mod in core.record_modules():
            size = record_dtype(mod.darshan_name).itemsize * core.record_limit
            modules.append({"name": mod.darshan_name, "offset": off, "capacity": core.record_limit})
            off += size
        head["modules"], head["names_offset"] = modules, off
        blob = json.dumps(head).encode()
        header_size = -(-(16 + len(blob)) // _PAGE) * _PAGE
        shift = header_size + _DYN - modules[0]["offset"] if modules else 0
        for m in modules:
            m["offset"] += shift
        head["names_offset"] += shift
        blob = json.dumps(head).encode()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = _os_open(str(path), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        _os_ftruncate(fd, head["names_offset"])
        mm = mmap.mmap(fd, head["names_offset"], mmap.MAP_SHARED)
        mm[:16] = MAGIC + struct.pack("<Q", len(blob))
        mm[16 : 16 + len(blob)] = blob
        head["header_size"] = header_size
        return cls(path, fd, mm, head)

    def add_name(self, rec_id: int, name: str) -> None:
        entry = struct.pack("<Q", rec_id) + name.encode(errors="surrogateescape") + b"\0"
        _os_pwrite(self.fd, entry, self.names_pos)
        self.names_pos += len(entry)

    def sync(self, core) -> None:
        """Copy every record that changed since the last sync into its slot.

        The time is stamped first: a process killed during a sync (its first one may be
        slow under load) still leaves the time the records were copied from.
        """
        dyn = self.layout["header_size"]
        struct.pack_into("<d", self.mm, dyn, core.wtime())
        pairs = zip(core.record_modules(), self.layout["modules"], strict=True)
        for k, (mod, spec) in enumerate(pairs):
            dtype = record_dtype(mod.darshan_name)
            row = np.zeros(1, dtype=dtype)
            recs = list(mod.records)
            for rec in recs:
                sig = (sum(rec.c), sum(rec.f))
                key = (mod.darshan_name, rec.slot)
                if self._seen.get(key) == sig:
                    continue
                self._seen[key] = sig
                rec.to_row(row[0])
                row["rank"] = core.proc.rank
                start = spec["offset"] + rec.slot * dtype.itemsize
                self.mm[start : start + dtype.itemsize] = row.tobytes()
            struct.pack_into("<qq", self.mm, dyn + 8 + 16 * k, len(recs), mod.dropped)

    def close(self, remove: bool = True) -> None:
        self.mm.close()
        _os_close(self.fd)
        if remove:
            self.path.unlink(missing_ok=True)


def recover_state(path: str | Path) -> tuple[LogContent, int]:
    """The log content a state file holds, and the rank it belongs to.

    The job's end time is the last sync; the job metadata says ``iosight_recovered=1``.
    """
    path = Path(path)
    raw = path.read_bytes()
    if raw[:8] != MAGIC:
        raise CorruptLogError(f"{path} is not an iosight trace state file")
    (n,) = struct.unpack_from("<Q", raw, 8)
    head = json.loads(raw[16 : 16 + n])
    header_size = -(-(16 + n) // _PAGE) * _PAGE
    (last,) = struct.unpack_from("<d", raw, header_size)
    records, partial, meta = {}, set(), dict(head["metadata"])
    for k, spec in enumerate(head["modules"]):
        count, dropped = struct.unpack_from("<qq", raw, header_size + 8 + 16 * k)
        dtype = record_dtype(spec["name"])
        arr = np.frombuffer(raw, dtype=dtype, count=count, offset=spec["offset"]).copy()
        records[spec["name"]] = arr[arr["id"] != 0]
        if dropped:
            partial.add(spec["name"])
            meta[f"iosight_dropped_{spec['name']}"] = str(dropped)
    names, pos = {}, head["names_offset"]
    while pos + 8 < len(raw) and b"\0" in raw[pos + 8 :]:
        end = raw.index(b"\0", pos + 8)
        names[struct.unpack_from("<Q", raw, pos)[0]] = raw[pos + 8 : end].decode(
            errors="surrogateescape"
        )
        pos = end + 1
    start = head["start_ns"]
    end_ns = start + int(last * 1e9)
    meta["iosight_recovered"] = "1"
    job = Job(
        uid=head["uid"],
        start_time_sec=start // 10**9,
        start_time_nsec=start % 10**9,
        end_time_sec=end_ns // 10**9,
        end_time_nsec=end_ns % 10**9,
        nprocs=head["nprocs"],
        jobid=head["jobid"],
        metadata=meta,
    )
    mounts = [tuple(m) for m in head["mounts"]]
    log = LogContent(job, head["exe"], mounts, names, records, partial)
    return log, head["rank"]
