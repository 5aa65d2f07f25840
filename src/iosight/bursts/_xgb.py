"""XGBoost that accepts any class labels (imported only when the model is used).

``XGBClassifier`` insists on classes ``0..K-1``; a time-series fold of a rare-class target
(burst severity) often lacks some class, so the labels are encoded per fit.
"""

from __future__ import annotations

import numpy as np
from xgboost import XGBClassifier


class DenseLabelXGBClassifier(XGBClassifier):
    """``XGBClassifier`` fitted on the ranks of its labels; predicts the labels back."""

    def fit(self, X, y, **kwargs):
        self.labels_, codes = np.unique(np.asarray(y), return_inverse=True)
        return super().fit(X, codes, **kwargs)

    def predict(self, X, **kwargs):
        return self.labels_[np.asarray(super().predict(X, **kwargs), dtype=np.int64)]
