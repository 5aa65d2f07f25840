"""The shared user-error checks of iosight._errors."""

import numpy as np
import pytest

from iosight._errors import MAX_SEED, IosightError, check_seed


def test_check_seed_accepts_numpy_seeds_only():
    for ok in (0, 7, MAX_SEED, np.int64(3)):
        check_seed(ok)
        np.random.default_rng(ok)  # the range numpy takes
    for bad in (-1, MAX_SEED + 1, 1.5, "3", None, True):
        with pytest.raises(IosightError, match=r"'seed' parameter must be an integer in 0\.\."):
            check_seed(bad)
