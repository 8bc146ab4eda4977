"""The release report can carry the attack suite (the hook the release pipeline can call)."""

import json

import numpy as np

from safeshare.data import Table
from safeshare.evaluate import evaluate_release
from safeshare.evaluate.assessment import EvaluationOptions, assess
from safeshare.release import Reading, SynthesisSettings, release
from safeshare.report.card import _json_default
from safeshare.report.html import render_report


def test_release_report_with_attacks(tmp_path, fair):
    frame, schema = fair
    done = release(
        frame,
        out=tmp_path / "out",
        seed=0,
        ledger=tmp_path / "ledger.sqlite",
        settings=SynthesisSettings(epsilon=1.0),
        reading=Reading(schema=schema, name="fair"),
    )
    domain = schema.domain()
    train, _ = Table.from_frame(frame.iloc[:5000], domain)
    holdout, _ = Table.from_frame(frame.iloc[5000:], domain)
    synthetic, _ = Table.from_frame(done.synthetic, domain)
    rng = np.random.default_rng(0)
    _, risk = evaluate_release(synthetic, train, holdout, rng)
    assessment = assess(synthetic, train, holdout, rng, EvaluationOptions(attacks=200, ml=False))
    card = dict(done.card)
    card["metrics"] = {**card["metrics"], "evaluation": assessment.to_dict()}
    json.dumps(card["metrics"]["evaluation"], default=_json_default)  # the card can hold it
    plain = render_report(done.card, train=train, synthetic=synthetic, risk=risk)
    with_attacks = render_report(
        card, train=train, synthetic=synthetic, risk=risk, assessment=assessment
    )
    assert "Attacks on the release" not in plain
    assert "Attacks on the release" in with_attacks and "singling out" in with_attacks
    assert with_attacks.count("<svg") == plain.count("<svg") + 1
