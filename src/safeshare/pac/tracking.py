"""Posterior tracking: PAC noise for an adaptive sequence of queries on one secret.

The secret is one of ``m`` candidate worlds (random halves of the records, drawn in
complementary pairs so that every record is in exactly half of them: its prior is exactly 1/2),
chosen uniformly and kept.  Each query is run on every world; its noise is calibrated to the
covariance of the answers *under the adversary's current posterior* over the worlds (exact,
nothing is estimated), and after the release the posterior is updated by Bayes' rule with the
Gaussian likelihood of the noisy answer.  As the posterior sharpens, later queries get the
noise they need.  Conditional MI adds up (chain rule), so ``k`` queries at ``beta`` each
leak at most ``k * beta`` about the world, hence about any record's membership.

>>> import numpy as np
>>> tracker = PosteriorTracker(np.arange(100.0), mi_per_query=0.1, worlds=32, rng=0)
>>> answer = tracker.release(lambda rows: rows.mean())
>>> tracker.queries, round(tracker.bound.mi, 3), bool(abs(tracker.posterior.sum() - 1) < 1e-9)
(1, 0.1, True)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from safeshare.dp.randomness import Randomness, RandomSource
from safeshare.errors import InputError
from safeshare.pac.bounds import MEMBERSHIP_PRIOR, PACBound, check_mi
from safeshare.pac.noise import NoiseShape, anisotropic_variances
from safeshare.pac.outputs import Layout, check_finite, flatten, flatten_like
from safeshare.pac.runner import Mechanism
from safeshare.pac.sampling import rows_of, take_rows

_RELATIVE_FLOOR = 1e-12


class PosteriorTracker:
    """Answers queries on one secret world among ``worlds``, tracking the adversary's posterior."""

    def __init__(
        self,
        data: Any,
        *,
        mi_per_query: float,
        worlds: int = 64,
        rng: RandomSource = None,
    ) -> None:
        check_mi(mi_per_query)
        if not isinstance(worlds, int) or worlds < 4 or worlds % 2:
            raise InputError(f"worlds must be an even number >= 4, got {worlds!r}; try 64")
        self.data = data
        self.mi_per_query = mi_per_query
        self._randomness = rng if isinstance(rng, Randomness) else Randomness(rng)
        generator = self._randomness.generator()
        rows = rows_of(data)
        halves = generator.random((worlds // 2, rows)) < 0.5
        self.masks = np.empty((worlds, rows), dtype=bool)
        self.masks[0::2], self.masks[1::2] = halves, ~halves
        self._secret = self._randomness.uniform_below(worlds)
        self.posterior = np.full(worlds, 1.0 / worlds)
        self.queries = 0
        self.noise_powers: list[float] = []

    @property
    def secure_noise(self) -> bool:
        return self._randomness.secure

    @property
    def bound(self) -> PACBound:
        """The guarantee so far: ``queries * mi_per_query`` nats about the secret world."""
        return PACBound.of(self.mi_per_query, prior=MEMBERSHIP_PRIOR, releases=self.queries)

    def membership_posterior(self) -> np.ndarray:
        """Each record's posterior probability of being in the secret world (prior 1/2)."""
        return np.asarray(self.posterior @ self.masks)

    def answers(self, mechanism: Mechanism) -> tuple[Layout, np.ndarray]:
        """The query's exact answer on every world (worlds x d)."""
        layout, first = flatten(mechanism(take_rows(self.data, self.masks[0])), run=0)
        rows = [first]
        for world in range(1, len(self.masks)):
            output = mechanism(take_rows(self.data, self.masks[world]))
            rows.append(flatten_like(layout, output, run=world))
        matrix = np.vstack(rows)
        for world, row in enumerate(matrix):
            check_finite(layout, row, world)
        return layout, matrix

    def noise_for(self, answers: np.ndarray) -> NoiseShape:
        """Noise with MI(world; answer + noise | past answers) <= mi_per_query, exactly."""
        mean = self.posterior @ answers
        centred = answers - mean
        weighted = centred * np.sqrt(self.posterior)[:, None]
        _, singular, directions = np.linalg.svd(weighted, full_matrices=False)
        eigenvalues = singular**2
        if eigenvalues.max(initial=0.0) <= 0:
            return NoiseShape.isotropic(answers.shape[1], 0.0)
        keep = eigenvalues > _RELATIVE_FLOOR * eigenvalues.max()
        variances = anisotropic_variances(eigenvalues[keep], self.mi_per_query)
        return NoiseShape(directions[keep], variances, 0.0)

    def release(self, mechanism: Mechanism) -> Any:
        """One noisy answer on the secret world; the posterior is updated with it."""
        layout, answers = self.answers(mechanism)
        noise = self.noise_for(answers)
        noisy = answers[self._secret] + noise.sample(self._randomness.generator())
        self._update(answers, noisy, noise)
        self.queries += 1
        self.noise_powers.append(noise.power)
        return layout.restore(noisy)

    def _update(self, answers: np.ndarray, noisy: np.ndarray, noise: NoiseShape) -> None:
        if len(noise) == 0:
            return  # every world gave the same answer: nothing learned
        projected = (answers - noisy) @ noise.basis.T  # all answers differ within the basis
        distance = (projected**2 / noise.variances).sum(axis=1)
        with np.errstate(divide="ignore"):
            log_posterior = np.log(self.posterior) - 0.5 * distance
        top = log_posterior.max()
        if not math.isfinite(top):  # pragma: no cover - the secret world is always finite
            return
        weights = np.exp(log_posterior - top)
        self.posterior = weights / weights.sum()
