"""Write-performance models for multistage write paths (Xie et al., DESIGN.md)."""

from iosight.perfmodel._features import (
    FeatureSpec,
    WritePattern,
    compute_features,
    describe_features,
    feature_names,
    feature_specs,
    features_from_loads,
    place_nodes,
    write_path_loads,
)
from iosight.perfmodel._platform import (
    Platform,
    Stage,
    Storage,
    builtin_platforms,
    load_platform,
    parse_size,
    platform_from_dict,
)

__all__ = [
    "FeatureSpec",
    "Platform",
    "Stage",
    "Storage",
    "WritePattern",
    "builtin_platforms",
    "compute_features",
    "describe_features",
    "feature_names",
    "feature_specs",
    "features_from_loads",
    "load_platform",
    "parse_size",
    "place_nodes",
    "platform_from_dict",
    "write_path_loads",
]
