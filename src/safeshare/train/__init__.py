"""train/: DP-SGD accounting, a privacy planner, DP training (torch, lazily) and audits.

Importing this package never imports torch: only :mod:`safeshare.train.tabular` needs it.
"""

from safeshare.train.accounting import DPSGDEvent, calibrate_noise, dpsgd_epsilon

__all__ = ["DPSGDEvent", "calibrate_noise", "dpsgd_epsilon"]
