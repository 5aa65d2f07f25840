"""Counter tables of the Darshan 2.x log format and their 3.x names.

Darshan 2.x keeps one record per (file, rank) with 144 integer counters
(``CP_*``) and 18 floating-point counters (``CP_F_*``) covering both the POSIX
and the MPI-IO layer (``darshan-log-format.h``, format 2.05/2.06). Older formats
(1.21-1.24) hold fewer counters; ``darshan-logutils.c`` (``shift_missing_*``)
widens them by inserting zeros at the counters added later, which is what
:data:`MISSING_COUNTERS` encodes.

iosight's reading of the 2.x -> 3.x mapping: a counter gets its 3.x name when
3.x kept the same meaning (``CP_BYTES_READ`` -> ``POSIX_BYTES_READ``,
``CP_INDEP_OPENS`` -> ``MPIIO_INDEP_OPENS``, ``CP_SIZE_READ_AGG_*`` ->
``MPIIO_SIZE_READ_AGG_*``, ``CP_F_MPI_READ_TIME`` -> ``MPIIO_F_READ_TIME``,
``CP_F_OPEN_TIMESTAMP`` -> ``POSIX_F_OPEN_START_TIMESTAMP``,
``CP_F_CLOSE_TIMESTAMP`` -> ``POSIX_F_CLOSE_END_TIMESTAMP``). Counters 3.x
dropped or moved to modules 2.x did not have keep their 2.x name: stdio-level
``CP_POSIX_F*`` operations, ``CP_INDEP_NC_OPENS``/``CP_COLL_NC_OPENS``/
``CP_HDF5_OPENS``, ``CP_DEVICE`` and ``CP_SIZE_AT_OPEN`` stay in ``posix``;
``CP_COMBINER_*`` and ``CP_EXTENT_*`` (MPI datatype statistics) stay in
``mpiio``. Nothing is dropped.
"""

from __future__ import annotations

from iosight.darshan._tables import ACCESS_SIZE_BINS

_COMBINERS = (
    "NAMED",
    "DUP",
    "CONTIGUOUS",
    "VECTOR",
    "HVECTOR_INTEGER",
    "HVECTOR",
    "INDEXED",
    "HINDEXED_INTEGER",
    "HINDEXED",
    "INDEXED_BLOCK",
    "STRUCT_INTEGER",
    "STRUCT",
    "SUBARRAY",
    "DARRAY",
    "F90_REAL",
    "F90_COMPLEX",
    "F90_INTEGER",
    "RESIZED",
)

# enum darshan_indices of format 2.05/2.06, in order (CP_NUM_INDICES = 144)
CP_COUNTERS: tuple[str, ...] = (
    *(
        f"CP_{c}"
        for c in (
            "INDEP_OPENS COLL_OPENS INDEP_READS INDEP_WRITES COLL_READS COLL_WRITES "
            "SPLIT_READS SPLIT_WRITES NB_READS NB_WRITES SYNCS POSIX_READS POSIX_WRITES "
            "POSIX_OPENS POSIX_SEEKS POSIX_STATS POSIX_MMAPS POSIX_FREADS POSIX_FWRITES "
            "POSIX_FOPENS POSIX_FSEEKS POSIX_FSYNCS POSIX_FDSYNCS INDEP_NC_OPENS "
            "COLL_NC_OPENS HDF5_OPENS"
        ).split()
    ),
    *(f"CP_COMBINER_{c}" for c in _COMBINERS),
    *(
        f"CP_{c}"
        for c in (
            "HINTS VIEWS MODE BYTES_READ BYTES_WRITTEN MAX_BYTE_READ MAX_BYTE_WRITTEN "
            "CONSEC_READS CONSEC_WRITES SEQ_READS SEQ_WRITES RW_SWITCHES MEM_NOT_ALIGNED "
            "MEM_ALIGNMENT FILE_NOT_ALIGNED FILE_ALIGNMENT MAX_READ_TIME_SIZE "
            "MAX_WRITE_TIME_SIZE"
        ).split()
    ),
    *(f"CP_SIZE_READ_{b}" for b in ACCESS_SIZE_BINS),
    *(f"CP_SIZE_WRITE_{b}" for b in ACCESS_SIZE_BINS),
    *(f"CP_SIZE_READ_AGG_{b}" for b in ACCESS_SIZE_BINS),
    *(f"CP_SIZE_WRITE_AGG_{b}" for b in ACCESS_SIZE_BINS),
    *(f"CP_EXTENT_READ_{b}" for b in ACCESS_SIZE_BINS),
    *(f"CP_EXTENT_WRITE_{b}" for b in ACCESS_SIZE_BINS),
    *(f"CP_STRIDE{i}_STRIDE" for i in range(1, 5)),
    *(f"CP_STRIDE{i}_COUNT" for i in range(1, 5)),
    *(f"CP_ACCESS{i}_ACCESS" for i in range(1, 5)),
    *(f"CP_ACCESS{i}_COUNT" for i in range(1, 5)),
    "CP_DEVICE",
    "CP_SIZE_AT_OPEN",
    "CP_FASTEST_RANK",
    "CP_FASTEST_RANK_BYTES",
    "CP_SLOWEST_RANK",
    "CP_SLOWEST_RANK_BYTES",
)

# enum f_darshan_indices (CP_F_NUM_INDICES = 18)
CP_F_COUNTERS: tuple[str, ...] = tuple(
    f"CP_F_{c}"
    for c in (
        "OPEN_TIMESTAMP READ_START_TIMESTAMP WRITE_START_TIMESTAMP CLOSE_TIMESTAMP "
        "READ_END_TIMESTAMP WRITE_END_TIMESTAMP POSIX_READ_TIME POSIX_WRITE_TIME "
        "POSIX_META_TIME MPI_META_TIME MPI_READ_TIME MPI_WRITE_TIME MAX_READ_TIME "
        "MAX_WRITE_TIME FASTEST_RANK_TIME SLOWEST_RANK_TIME VARIANCE_RANK_TIME "
        "VARIANCE_RANK_BYTES"
    ).split()
)

_RANK_COUNTERS = (
    "CP_FASTEST_RANK",
    "CP_FASTEST_RANK_BYTES",
    "CP_SLOWEST_RANK",
    "CP_SLOWEST_RANK_BYTES",
)
_RANK_F_COUNTERS = (
    "CP_F_FASTEST_RANK_TIME",
    "CP_F_SLOWEST_RANK_TIME",
    "CP_F_VARIANCE_RANK_TIME",
    "CP_F_VARIANCE_RANK_BYTES",
)
_MISSING_1_21 = (
    ("CP_INDEP_NC_OPENS", "CP_COLL_NC_OPENS", "CP_HDF5_OPENS", "CP_MAX_READ_TIME_SIZE")
    + ("CP_MAX_WRITE_TIME_SIZE", "CP_DEVICE", "CP_SIZE_AT_OPEN", *_RANK_COUNTERS),
    ("CP_F_MAX_READ_TIME", "CP_F_MAX_WRITE_TIME", *_RANK_F_COUNTERS),
)
_MISSING_1_22 = (("CP_DEVICE", "CP_SIZE_AT_OPEN", *_RANK_COUNTERS), _RANK_F_COUNTERS)
_MISSING_1_24 = (_RANK_COUNTERS, _RANK_F_COUNTERS)

# format version -> (integer counters, float counters) absent from its records
# (darshan-logutils.c: shift_missing_1_21/_1_22/_1_24; 1.23 reads as 1.24)
MISSING_COUNTERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "1.21": _MISSING_1_21,
    "1.22": _MISSING_1_22,
    "1.23": _MISSING_1_24,
    "1.24": _MISSING_1_24,
}


def _build_mapping() -> tuple[dict[str, str], dict[str, str]]:
    """2.x counter -> 3.x column, split by warehouse table (posix, mpiio)."""
    posix: dict[str, str] = {}
    mpiio: dict[str, str] = {}
    for name in ("INDEP", "COLL", "SPLIT", "NB"):
        for op in ("OPENS", "READS", "WRITES"):
            if f"CP_{name}_{op}" in CP_COUNTERS:
                mpiio[f"CP_{name}_{op}"] = f"MPIIO_{name}_{op}"
    for c in ("SYNCS", "HINTS", "VIEWS"):
        mpiio[f"CP_{c}"] = f"MPIIO_{c}"
    for c in ("READS", "WRITES", "OPENS", "SEEKS", "STATS", "MMAPS", "FSYNCS", "FDSYNCS"):
        posix[f"CP_POSIX_{c}"] = f"POSIX_{c}"
    plain = (
        "MODE BYTES_READ BYTES_WRITTEN MAX_BYTE_READ MAX_BYTE_WRITTEN CONSEC_READS "
        "CONSEC_WRITES SEQ_READS SEQ_WRITES RW_SWITCHES MEM_NOT_ALIGNED MEM_ALIGNMENT "
        "FILE_NOT_ALIGNED FILE_ALIGNMENT MAX_READ_TIME_SIZE MAX_WRITE_TIME_SIZE "
        "FASTEST_RANK FASTEST_RANK_BYTES SLOWEST_RANK SLOWEST_RANK_BYTES"
    ).split()
    for c in plain:
        posix[f"CP_{c}"] = f"POSIX_{c}"
    for b in ACCESS_SIZE_BINS:
        posix[f"CP_SIZE_READ_{b}"] = f"POSIX_SIZE_READ_{b}"
        posix[f"CP_SIZE_WRITE_{b}"] = f"POSIX_SIZE_WRITE_{b}"
        mpiio[f"CP_SIZE_READ_AGG_{b}"] = f"MPIIO_SIZE_READ_AGG_{b}"
        mpiio[f"CP_SIZE_WRITE_AGG_{b}"] = f"MPIIO_SIZE_WRITE_AGG_{b}"
        mpiio[f"CP_EXTENT_READ_{b}"] = f"CP_EXTENT_READ_{b}"
        mpiio[f"CP_EXTENT_WRITE_{b}"] = f"CP_EXTENT_WRITE_{b}"
    for i in range(1, 5):
        for kind, what in (("STRIDE", "STRIDE"), ("STRIDE", "COUNT"), ("ACCESS", "ACCESS")):
            posix[f"CP_{kind}{i}_{what}"] = f"POSIX_{kind}{i}_{what}"
        posix[f"CP_ACCESS{i}_COUNT"] = f"POSIX_ACCESS{i}_COUNT"
    for c in _COMBINERS:
        mpiio[f"CP_COMBINER_{c}"] = f"CP_COMBINER_{c}"
    kept = (
        "CP_POSIX_FREADS CP_POSIX_FWRITES CP_POSIX_FOPENS CP_POSIX_FSEEKS "
        "CP_INDEP_NC_OPENS CP_COLL_NC_OPENS CP_HDF5_OPENS CP_DEVICE CP_SIZE_AT_OPEN"
    ).split()
    for c in kept:
        posix[c] = c
    f_posix = {
        "CP_F_OPEN_TIMESTAMP": "POSIX_F_OPEN_START_TIMESTAMP",
        "CP_F_READ_START_TIMESTAMP": "POSIX_F_READ_START_TIMESTAMP",
        "CP_F_WRITE_START_TIMESTAMP": "POSIX_F_WRITE_START_TIMESTAMP",
        "CP_F_CLOSE_TIMESTAMP": "POSIX_F_CLOSE_END_TIMESTAMP",
        "CP_F_READ_END_TIMESTAMP": "POSIX_F_READ_END_TIMESTAMP",
        "CP_F_WRITE_END_TIMESTAMP": "POSIX_F_WRITE_END_TIMESTAMP",
        "CP_F_POSIX_READ_TIME": "POSIX_F_READ_TIME",
        "CP_F_POSIX_WRITE_TIME": "POSIX_F_WRITE_TIME",
        "CP_F_POSIX_META_TIME": "POSIX_F_META_TIME",
        "CP_F_MAX_READ_TIME": "POSIX_F_MAX_READ_TIME",
        "CP_F_MAX_WRITE_TIME": "POSIX_F_MAX_WRITE_TIME",
        **{c: "POSIX_F_" + c.removeprefix("CP_F_") for c in _RANK_F_COUNTERS},
    }
    posix.update(f_posix)
    for c in ("META", "READ", "WRITE"):
        mpiio[f"CP_F_MPI_{c}_TIME"] = f"MPIIO_F_{c}_TIME"
    return posix, mpiio


POSIX_COLUMNS, MPIIO_COLUMNS = _build_mapping()
"""2.x counter name -> warehouse column of the ``posix`` / ``mpiio`` table."""
