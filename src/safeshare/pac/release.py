"""``PACRelease``: calibrated noise for one black box, ready to apply, with its bound and caveats.

``apply()`` evaluates the function on the secret (a fresh random half of the records in the
membership setting, drawn once and kept; the given data with a user sampler), adds the noise
from a secure generator (unless a seed was given), and returns the output in the function's own
structure.  Every apply is a release: MI adds up, and the bound reported grows with them.
It refuses (:class:`NoiseSwampsOutputError`) when the noise would swamp the output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.dp.randomness import Randomness
from safeshare.pac.bounds import DEFAULT_DELTA, PACBound
from safeshare.pac.errors import NoiseSwampsOutputError
from safeshare.pac.noise import NoiseShape
from safeshare.pac.outputs import Layout, check_finite, flatten_like
from safeshare.pac.sampling import membership_mask, rows_of, take_rows

if TYPE_CHECKING:
    from safeshare.pac.calibration import CalibrationReport
    from safeshare.pac.runner import Mechanism


@dataclass(frozen=True)
class PACOutput:
    """One noisy release: the value (same structure as the function's output) and its bound."""

    value: Any
    flat: np.ndarray
    bound: PACBound
    """The guarantee after this release, counting every earlier apply of the same release."""
    secure_noise: bool


class PACRelease:
    """Calibrated PAC noise for a black box (made by :func:`safeshare.pac.calibrate`)."""

    def __init__(
        self,
        *,
        mechanism: Mechanism,
        data: Any,
        sampler_given: bool,
        layout: Layout,
        noise: NoiseShape,
        mi_budget: float,
        prior: float,
        calibration: CalibrationReport,
        randomness: Randomness,
        min_snr: float,
        delta: float = DEFAULT_DELTA,
    ) -> None:
        self.mechanism = mechanism
        self.layout = layout
        self.noise = noise
        self.mi_budget = mi_budget
        self.prior = prior
        self.delta = delta
        self.calibration = calibration
        self.min_snr = min_snr
        self.membership = not sampler_given
        self._data = data
        self._randomness = randomness
        self._secret: Any = None
        self.releases = 0

    @property
    def secure_noise(self) -> bool:
        return self._randomness.secure

    @property
    def bound(self) -> PACBound:
        """The guarantee of one release."""
        return PACBound.of(self.mi_budget, prior=self.prior, delta=self.delta)

    def bound_after(self, releases: int) -> PACBound:
        """The guarantee after ``releases`` releases on the same secret (MI adds up)."""
        return PACBound.of(self.mi_budget, prior=self.prior, delta=self.delta, releases=releases)

    def coordinate_snr(self) -> np.ndarray:
        """Per output coordinate: its squared mean over the runs divided by its noise variance."""
        noise = self.noise.diagonal()
        signal = np.asarray(self.calibration.output_mean, dtype=float) ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(noise > 0, signal / np.where(noise > 0, noise, 1.0), np.inf)
        return np.asarray(ratio)

    @property
    def snr(self) -> float:
        """The median coordinate's signal-to-noise power (noise variance scales as 1 / MI)."""
        return float(np.median(self.coordinate_snr()))

    @property
    def swamped(self) -> bool:
        """Noise power above the output's (over ``min_snr``) in at least half the coordinates."""
        return self.snr < self.min_snr

    @property
    def mi_needed(self) -> float:
        """The MI budget at which the median coordinate would just meet ``min_snr``."""
        if self.snr <= 0:
            return math.inf
        return self.mi_budget * self.min_snr / self.snr

    def apply(self, *, allow_swamped: bool = False) -> PACOutput:
        """Release the function's output on the secret, plus the calibrated noise."""
        if self.swamped and not allow_swamped:
            raise NoiseSwampsOutputError(self.swamp_message())
        if self._data is None:
            from safeshare.errors import InputError

            raise InputError("no data to release on: pass the actual dataset to calibrate()")
        if self.membership and self._secret is None:
            mask = membership_mask(rows_of(self._data), self._randomness.generator())
            self._secret = take_rows(self._data, mask)
        secret = self._secret if self.membership else self._data
        exact = flatten_like(self.layout, self.mechanism(secret), run=-1)
        check_finite(self.layout, exact, -1)
        noisy = exact + self.noise.sample(self._randomness.generator())
        self.releases += 1
        return PACOutput(
            value=self.layout.restore(noisy),
            flat=noisy,
            bound=self.bound_after(self.releases),
            secure_noise=self.secure_noise,
        )

    def swamp_message(self) -> str:
        return (
            f"at MI {self.mi_budget:g} the noise would swamp the output: in half of its "
            f"{self.layout.size} coordinate(s) the noise power is at least {1 / self.snr:.3g} "
            f"times the value's (limit {1 / self.min_snr:.3g} for min_snr={self.min_snr:g}); "
            "nothing was released. A budget of about MI "
            f"{self.mi_needed:.3g} would meet it (posterior success "
            f"{PACBound.of(min(self.mi_needed, 50.0), prior=self.prior).success_rate:.1%}); or "
            "accept the noise with allow_swamped=True / --allow-swamped"
        )

    def caveats(self) -> list[str]:
        """What the guarantee rests on, in sentences for the card and the report."""
        cal = self.calibration
        lines = [
            "The bound holds for secrets drawn from the assumed distribution "
            + (
                "(each record kept independently with probability 1/2, the data being public "
                "otherwise)"
                if self.membership
                else "(the user's sampler: the real data must be a draw from it)"
            )
            + "; it is not a worst-case (differential privacy) guarantee.",
            f"How the output varies was estimated from {cal.runs} black-box runs; the bound "
            f"holds with confidence {cal.confidence:.0%} over that estimate (a normal-"
            "approximation upper bound on runs not used to shape the noise, which can be "
            "optimistic for very heavy-tailed outputs).",
            "The MI bound is the Gaussian one, 1/2 log det(I + noise^-1 cov(output)), an upper "
            "bound for any output distribution.",
        ]
        if not cal.converged:
            why = [f"its safety margin adds {cal.margin:.0%} to the noise power"]
            if not cal.stable:
                why.append("the noise power still moved between the last two rounds")
            lines.append(
                f"The estimate did not converge to the {cal.tolerance:.0%} tolerance ("
                + "; ".join(why)
                + "): the bound holds, with more noise than a longer calibration might need."
            )
        if cal.method == "isotropic":
            lines.append(
                "Isotropic noise was used: the output's directions were not worth estimating "
                "(too few runs for its dimension, or no gain)."
            )
        if self.membership:
            lines.append(
                "The release is computed on a random half of the records (about "
                f"{rows_of(self._data) // 2}), drawn once; repeated releases reuse it and add "
                "up their MI."
            )
        if not self.secure_noise:
            lines.append(
                "Noise and secrets were drawn from a seeded generator: NOT private against "
                "anyone who knows the seed."
            )
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The PAC section of a privacy card."""
        diagonal = self.noise.diagonal()
        return {
            "mi_budget_per_release": self.mi_budget,
            "bound": self.bound_after(max(self.releases, 1)).to_dict(),
            "secret": "membership (each record kept with probability 1/2)"
            if self.membership
            else "user sampler",
            "noise": {
                "kind": "Gaussian, " + self.calibration.method,
                "power": self.noise.power,
                "std_per_output": {
                    label: math.sqrt(v)
                    for label, v in zip(self.layout.labels, diagonal, strict=True)
                },
                "directions_shaped": len(self.noise),
                "secure": self.secure_noise,
            },
            "calibration": self.calibration.to_dict(),
            "signal_to_noise_power_median": self.snr,
            "outputs_swamped": int(np.sum(self.coordinate_snr() < 1.0)),
            "caveats": self.caveats(),
        }
