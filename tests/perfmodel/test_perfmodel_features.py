"""Features on hand-drawn topologies, worked out by hand (Xie et al. Tables I, II)."""

from __future__ import annotations

import numpy as np
import pytest

from iosight._errors import IosightError
from iosight.perfmodel import (
    WritePattern,
    compute_features,
    describe_features,
    feature_names,
    load_platform,
    parse_size,
)
from iosight.perfmodel._features import write_path_loads
from iosight.perfmodel._platform import platform_from_dict

MiB = 1024**2


def tiny_lustre(**storage):
    """4 nodes, 2 routers (2 nodes each), 3 OSS x 2 OST (OST i -> OSS i mod 3)."""
    sto = {
        "servers": 3,
        "targets": 6,
        "stripe_size": "1MiB",
        "default_stripe_count": 2,
        "start_target": "sequence",
        **storage,
    }
    return platform_from_dict(
        {
            "name": "tiny",
            "filesystem": "lustre",
            "compute": {"nodes": 4, "cores_per_node": 2},
            "stages": [{"name": "router", "count": 2}],
            "network": "SION",
            "storage": sto,
        }
    )


def tiny_gpfs():
    """8 nodes; 4 bridge nodes (2 nodes each) = 4 links; 2 I/O nodes; 2 servers x 3 NSDs."""
    return platform_from_dict(
        {
            "name": "tinyg",
            "filesystem": "gpfs",
            "compute": {"nodes": 8, "cores_per_node": 4},
            "stages": [
                {"name": "bridge", "count": 4},
                {"name": "link", "count": 4},
                {"name": "io_node", "count": 2},
            ],
            "network": "IB",
            "storage": {"servers": 2, "targets": 6, "block_size": "8MiB", "subblocks": 32},
        }
    )


def test_lustre_loads_by_hand():
    # 3 nodes (0,1 -> router 0; 2 -> router 1), 2 cores, 3 MiB files, stripe count 2.
    # Each file: stripes 0,2 on its first OST (2 MiB), stripe 1 on its second (1 MiB).
    # Sequence start OSTs 0,2,4,0,2,4 -> OST bytes 4,2,4,2,4,2 MiB; OSS j = OST j + OST j+3
    # -> 6 MiB each.
    q = write_path_loads(tiny_lustre(), WritePattern(3, 2, 3 * MiB, 2), np.array([0, 1, 2]))
    assert (q["s_r"], q["n_r"]) == (2, 2)
    assert q["s_ost"] == 4 * MiB and q["n_ost"] == 6
    assert q["s_oss"] == 6 * MiB and q["n_oss"] == 3


def test_lustre_skew_on_routers_and_osts():
    # nodes 0 and 1 share router 0; stripe count 1 and 1 MiB files: 4 files over OSTs
    # 0,1,2,3 with sequence; start at OST 5 -> 5,0,1,2: one file each, OSS 2 gets OST 5 and 2.
    q = write_path_loads(
        tiny_lustre(), WritePattern(2, 2, MiB, 1, first_target=5), np.array([0, 1])
    )
    assert (q["s_r"], q["n_r"]) == (2, 1)
    assert q["s_ost"] == MiB and q["n_ost"] == 4
    assert q["s_oss"] == 2 * MiB and q["n_oss"] == 3
    # a partial last stripe: 2.5 MiB, W=2 -> slot 0 gets 1 + 0.5 MiB, slot 1 gets 1 MiB
    q = write_path_loads(tiny_lustre(), WritePattern(1, 1, 5 * MiB // 2, 2), np.array([3]))
    assert q["s_ost"] == 1.5 * MiB and q["n_ost"] == 2 and (q["s_r"], q["n_r"]) == (1, 1)
    # stripe count above the stripes a file has: only ceil(K / 1 MiB) OSTs are touched
    q = write_path_loads(tiny_lustre(), WritePattern(1, 1, MiB, 4), np.array([0]))
    assert q["n_ost"] == 1


def test_lustre_feature_values_and_count():
    plat = tiny_lustre()
    f = describe_features(plat, WritePattern(3, 2, 3 * MiB, 2), np.array([0, 1, 2]))
    v = dict(zip(f.feature, f.value, strict=True))
    assert len(f) == 30 and len(feature_names(load_platform("titan"))) == 30
    assert v["m*n"] == 6 and v["1/(m*n)"] == pytest.approx(1 / 6)
    assert v["m*n*K"] == 18 * MiB and v["s_r*m*K"] == 2 * 2 * 3 * MiB
    assert v["1/(s_r*m*K)"] == pytest.approx(1 / (12 * MiB))
    assert v["(m*K)*(s_r*m*K)"] == 6 * MiB * 12 * MiB
    assert v["(s_r*m*K)*n_oss"] == 12 * MiB * 3
    assert v["s_oss*s_ost"] == 6 * MiB * 4 * MiB
    assert v["interference:n/(m*n*K)"] == pytest.approx(3 / (18 * MiB))


def test_gpfs_loads_and_count():
    plat = tiny_gpfs()
    # nodes 1,2,3: bridges 0,1,1 (s_b=2, n_b=2); I/O nodes 0,0,0 (s_io=3, n_io=1)
    # K = 20 MiB: 3 blocks -> 3 NSDs on 2 servers; last block 4 MiB = 16 subblocks of 256 KiB
    q = write_path_loads(plat, WritePattern(3, 4, 20 * MiB), np.array([1, 2, 3]))
    assert (q["s_b"], q["n_b"], q["s_l"], q["n_l"], q["s_io"], q["n_io"]) == (2, 2, 2, 2, 3, 1)
    assert (q["n_d"], q["n_s"], q["p_sub"]) == (3, 2, 16)
    assert (q["n_nsd"], q["n_nsds"]) == (36, 24)
    f = describe_features(plat, WritePattern(3, 4, 8 * MiB), np.array([1, 2, 3]))
    v = dict(zip(f.feature, f.value, strict=True))
    assert v["m*n*p_sub"] == 0 and v["s_io*m"] == 12  # whole block: no subblocks
    assert len(f) == 43 and len(feature_names(load_platform("cetus"))) == 43


def test_random_start_is_seeded_and_table_form():
    plat = tiny_lustre(start_target="random")
    pats = [{"nodes": 4, "cores": 2, "size": 3 * MiB, "stripes": 2}] * 2
    a = compute_features(plat, pats, seed=3)
    b = compute_features(plat, pats, seed=3)
    assert a.equals(b) and a.shape == (2, 30)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["storage"].update(targets=7), "spread evenly"),
        (lambda d: d["stages"][0].update(count=9), "only 4 compute nodes"),
        (lambda d: d.update(filesystem="zfs"), "lustre' or 'gpfs"),
        (lambda d: d["storage"].pop("stripe_size"), "needs stripe_size"),
        (lambda d: d["storage"].update(stripe_size="1 parsec"), "cannot read"),
        (lambda d: d.update(stagez=[]), "unknown key"),
        (lambda d: d["stages"][0].update(name="bridge"), "needs the stages"),
    ],
)
def test_inconsistent_platforms_are_refused(change, message):
    data = {
        "name": "tiny",
        "filesystem": "lustre",
        "compute": {"nodes": 4, "cores_per_node": 2},
        "stages": [{"name": "router", "count": 2}],
        "storage": {
            "servers": 3,
            "targets": 6,
            "stripe_size": "1MiB",
            "default_stripe_count": 2,
            "start_target": "sequence",
        },
    }
    change(data)
    with pytest.raises(IosightError, match=message):
        platform_from_dict(data)


def test_gpfs_nesting_and_pattern_checks():
    data = tiny_gpfs().to_dict()
    data["stages"][2]["count"] = 3  # 3 I/O nodes of 3 nodes: bridge groups of 2 do not nest
    with pytest.raises(IosightError, match="do not nest"):
        platform_from_dict(data)
    assert platform_from_dict(tiny_gpfs().to_dict()) == tiny_gpfs()
    with pytest.raises(IosightError, match="cores"):
        write_path_loads(tiny_lustre(), WritePattern(1, 3, MiB))
    with pytest.raises(IosightError, match="distinct"):
        write_path_loads(tiny_lustre(), WritePattern(2, 1, MiB), np.array([1, 1]))


def test_shipped_platforms():
    titan, cetus = load_platform("titan"), load_platform("cetus")
    assert titan.storage.targets == 1008 and titan.storage.servers == 144
    assert cetus.storage.block_size == 8 * MiB and cetus.stage("io_node").count == 32
    q = write_path_loads(titan, WritePattern(256, 8, 2**30, 4))
    assert (q["s_r"], q["n_r"]) == (109, 3)  # ceil(18688 / 172) = 109 nodes per router


def test_the_papers_41_gpfs_features_drop_n_nsds_only():
    cetus = load_platform("cetus")
    full, paper = feature_names(cetus), feature_names(cetus, gpfs_count=41)
    assert len(paper) == 41 and set(full) - set(paper) == {"n_nsds", "1/n_nsds"}
    assert "(s_b*m*K)*n_nsds" in paper  # Table V's Cetus model selects it
    assert feature_names(load_platform("titan"), gpfs_count=41) == feature_names(
        load_platform("titan")
    )


def test_sizes_are_bounded_and_features_stay_finite_up_to_the_bound():
    assert parse_size("1024TiB") == 1024**5
    for bad in ("999999999999999999999999999", "1025TiB", 1e300, float("inf"), float("nan")):
        with pytest.raises(IosightError, match="at most 1024TiB"):
            parse_size(bad)
    titan = load_platform("titan")
    f = describe_features(titan, WritePattern(512, 16, parse_size("1024TiB")), np.arange(512))
    assert np.isfinite(f["value"].to_numpy(float)).all()
