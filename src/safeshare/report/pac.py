"""The privacy card and the HTML report of a PAC release.

The card says what the guarantee covers (secrets drawn from the assumed distribution, not the
worst case), its numbers (MI, posterior success for the prior, DP-equivalent epsilon), the
noise added, how it was calibrated, and the caveats.  The report renders it with three charts:
the noise next to the output's spread per coordinate, the output's variance per direction next
to the noise's, and the posterior-success bound as releases add up.

>>> import pandas as pd
>>> from safeshare.pac import calibrate
>>> frame = pd.DataFrame({"x": [float(i % 17) for i in range(300)]})
>>> release = calibrate(lambda d: d["x"].mean(), frame, mi_budget=0.5, samples=128, rng=0)
>>> output = release.apply()
>>> card = build_pac_card(release, output, name="toy", fingerprint="0" * 64, function="mean",
...     columns={"x": "numeric"}, rows_in=300)
>>> card["method"], card["epsilon"], round(card["pac"]["bound"]["posterior_success"], 3)
('pac', None, 0.952)
>>> "<svg" in render_pac_report(card, release, output)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from jinja2 import Environment, PackageLoader, select_autoescape

from safeshare.pac.attack import AttackResult
from safeshare.pac.bounds import posterior_success
from safeshare.pac.release import PACOutput, PACRelease
from safeshare.report.card import card_header
from safeshare.report.plots import _figure, _svg

_OUTPUT, _NOISE, _BOUND = "#4C72B0", "#DD8452", "#8C8C8C"
_CHART_COORDINATES = 30


def build_pac_card(
    release: PACRelease,
    output: PACOutput,
    *,
    name: str,
    fingerprint: str,
    function: str,
    columns: dict[str, str],
    rows_in: int,
    attack: AttackResult | None = None,
) -> dict[str, Any]:
    """The card of one PAC release (all fields :func:`~safeshare.report.card.write_card` needs)."""
    bound = output.bound
    covered = (
        "membership of every record: with each record in or out of the data used at probability 1/2"
        if release.membership
        else "the whole dataset, assumed drawn from the user's sampler"
    )
    guarantee = (
        f"PAC Privacy: mutual information between the secret ({covered}) and everything "
        f"released so far is at most {bound.mi:.4g} nats, so no adversary succeeds more than "
        f"{bound.success_rate:.2%} of the time where a blind guess succeeds {bound.prior:.0%}"
        + (", for anyone who does not know the seed" if not release.secure_noise else "")
        + ". Not differential privacy: it holds for the assumed data distribution, not the "
        "worst case"
    )
    pac = release.to_dict()
    pac["bound"] = bound.to_dict()
    metrics: dict[str, Any] = {
        "posterior_success": bound.success_rate,
        "signal_to_noise_power_median": release.snr,
    }
    if attack is not None:
        metrics["membership_attack"] = attack.to_dict()
    header = card_header(
        "pac",
        guarantee,
        budget=None,
        secure_noise=release.secure_noise,
        source={"name": name, "sha256": fingerprint},
    )
    return {
        **header,
        "dp_equivalent_epsilon": bound.dp_epsilon,
        "dp_equivalent_delta": bound.delta,
        "budget": {
            "accounting": "PAC mutual information in nats; releases about the same secret add "
            "up (not recorded in the DP ledger)",
            "mi_per_release": release.mi_budget,
            "releases": bound.releases,
            "mi_total": bound.mi,
        },
        "domain_source": "none: the function reads the data directly",
        "columns": {c: {"kind": kind, "dropped": False} for c, kind in columns.items()},
        "function": function,
        "rows_in": rows_in,
        "rows_out": 0,
        "outputs": release.layout.size,
        "output": release.layout.jsonable(output.flat),
        "pac": pac,
        "metrics": metrics,
        "not_pac": [
            "rows_in is the exact number of records",
            "signal_to_noise_power_median, the output spread in the report and the calibration "
            "diagnostics are computed from the private data without noise; they are for the "
            "data owner's review",
            *(["the membership attack ran on the private data"] if attack is not None else []),
        ],
        "notes": [],
    }


def render_pac_report(card: dict[str, Any], release: PACRelease, output: PACOutput) -> str:
    """The report of a PAC release, as one self-contained HTML string."""
    environment = Environment(
        loader=PackageLoader("safeshare.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    labels = release.layout.labels
    noise_std = np.sqrt(release.noise.diagonal())
    rows = [
        {"label": label, "value": float(v), "noise": float(s)}
        for label, v, s in zip(labels, output.flat, noise_std, strict=True)
    ]
    charts = {
        "noise": _noise_chart(labels, noise_std, np.abs(output.flat)),
        "spectrum": _spectrum_chart(release),
        "releases": _releases_chart(release),
    }
    return environment.get_template("pac.html.j2").render(
        card=card, rows=rows[:200], more=max(0, len(rows) - 200), charts=charts
    )


def _noise_chart(labels: tuple[str, ...], noise_std: np.ndarray, released: np.ndarray) -> str:
    """Per output coordinate: the noise's standard deviation next to the released value."""
    shown = min(len(labels), _CHART_COORDINATES)
    figure = _figure(6.5, 0.28 * shown + 1.0)
    axes = figure.add_subplot()
    y = np.arange(shown)[::-1]
    axes.barh(y, noise_std[:shown], color=_NOISE, label="noise std")
    axes.plot(released[:shown], y, "o", color=_OUTPUT, label="|released value|")
    axes.set_yticks(y, [label[:24] for label in labels[:shown]])
    axes.set_xscale("symlog", linthresh=max(float(noise_std[:shown].min()), 1e-12))
    axes.legend(frameon=False, loc="lower right")
    return _svg(figure)


def _spectrum_chart(release: PACRelease) -> str:
    """The output's variance per principal direction and the noise variance given to it."""
    variances = np.asarray(release.calibration.output_variances, dtype=float)
    noise = np.sort(release.noise.variances)[::-1][: len(variances)]
    figure = _figure(6.5, 2.8)
    axes = figure.add_subplot()
    x = np.arange(1, len(variances) + 1)
    axes.semilogy(x, np.maximum(variances, 1e-300), "o-", color=_OUTPUT, label="output variance")
    if noise.size:
        axes.semilogy(np.arange(1, noise.size + 1), noise, "s-", color=_NOISE, label="noise")
    else:
        axes.axhline(release.noise.residual, color=_NOISE, label="noise (isotropic)")
    axes.set_xticks(x if len(x) <= 20 else x[:: max(1, len(x) // 10)])
    axes.set_xlabel("direction (largest output variance first)")
    axes.set_ylabel("variance")
    axes.legend(frameon=False)
    return _svg(figure)


def _releases_chart(release: PACRelease) -> str:
    """Posterior-success bound after k releases (MI adds up), with the prior."""
    k = np.unique(np.geomspace(1, 1000, 40).astype(int))
    success = [posterior_success(release.mi_budget * int(n), release.prior) for n in k]
    figure = _figure(6.5, 2.6)
    axes = figure.add_subplot()
    axes.semilogx(k, success, color=_NOISE, label="bound on posterior success")
    axes.axhline(release.prior, color=_BOUND, linestyle=":", label="blind guess (prior)")
    axes.set_xlabel("number of releases about the same secret")
    axes.set_ylabel("success rate")
    axes.set_ylim(min(release.prior, 0.5) - 0.02, 1.02)
    axes.legend(frameon=False)
    return _svg(figure)
