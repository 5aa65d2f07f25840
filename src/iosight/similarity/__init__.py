"""Temporal job I/O similarity: codings, Levenshtein similarity, clustering, search.

Betke & Kunkel, *The Importance of Temporal Behavior When Classifying Job IO
Patterns Using Machine Learning Techniques*, read as in ``methods/NOTES.md`` §3.
"""

from iosight.similarity._cluster import (
    PROGRESS_EVERY,
    Clustering,
    cluster_quality,
    clustering_tree,
    simplified_density,
)
from iosight.similarity._codings import (
    CODINGS,
    METRICS,
    SEGMENT_S,
    Categories,
    JobCodings,
    aggregate_zeros,
    bin_from_text,
    bin_to_text,
    categorize,
    code_series,
    decode_bin,
    encode_bin,
    hex_from_text,
    hex_levels,
    hex_to_text,
    is_zero_job,
    segment_samples,
)
from iosight.similarity._profiles import IO_DURATION_COLUMNS, IO_METRIC_COLUMNS, job_profiles
from iosight.similarity._search import SearchResult, SimilarityIndex, brute_force_top_k
from iosight.similarity._similarity import CodingSet, bin_similarity, hex_similarity

__all__ = [
    "PROGRESS_EVERY",
    "Clustering",
    "SearchResult",
    "SimilarityIndex",
    "brute_force_top_k",
    "cluster_quality",
    "clustering_tree",
    "simplified_density",
    "CODINGS",
    "IO_DURATION_COLUMNS",
    "IO_METRIC_COLUMNS",
    "METRICS",
    "SEGMENT_S",
    "Categories",
    "CodingSet",
    "JobCodings",
    "aggregate_zeros",
    "bin_from_text",
    "bin_similarity",
    "bin_to_text",
    "categorize",
    "code_series",
    "decode_bin",
    "encode_bin",
    "hex_from_text",
    "hex_levels",
    "hex_similarity",
    "hex_to_text",
    "is_zero_job",
    "job_profiles",
    "segment_samples",
]
