"""The evaluation a release runs on itself: utility and memorization risk.

>>> import numpy as np
>>> from safeshare.data.examples import load_example
>>> from safeshare.data import Table
>>> frame, schema = load_example("fair")
>>> table, _ = Table.from_frame(frame, schema.domain())
>>> rng = np.random.default_rng(0)
>>> train, holdout = table.take(np.arange(0, 5000)), table.take(np.arange(5000, 6366))
>>> utility, risk = evaluate_release(holdout, train, holdout, rng)
>>> utility.vs_holdout[0].mean
0.0
"""

from __future__ import annotations

import numpy as np

from safeshare.data.table import Table
from safeshare.engine import CountingEngine
from safeshare.evaluate.results import RiskResult, UtilityResult
from safeshare.evaluate.risk import memorization_risk
from safeshare.evaluate.utility import marginal_tvd


def evaluate_release(
    release: Table,
    train: Table,
    holdout: Table | None,
    rng: np.random.Generator,
    engine: CountingEngine | None = None,
) -> tuple[UtilityResult, RiskResult]:
    """Utility (k-way marginal TVD) and memorization risk of ``release``."""
    utility = release_utility(release, train, holdout, rng, engine)
    return utility, memorization_risk(release, train, holdout, rng)


def release_utility(
    release: Table,
    train: Table,
    holdout: Table | None,
    rng: np.random.Generator,
    engine: CountingEngine | None = None,
) -> UtilityResult:
    """The k-way marginal TVD of ``release`` to train and holdout, and train's to holdout."""
    vs_train = marginal_tvd(release, train, engine=engine, rng=rng)
    if holdout is None or not len(holdout):
        return UtilityResult(vs_train)
    return UtilityResult(
        vs_train,
        marginal_tvd(release, holdout, engine=engine, rng=rng),
        marginal_tvd(train, holdout, engine=engine, rng=rng),
    )
