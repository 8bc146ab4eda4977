"""Tabular Private Evolution through the release pipeline: card, report, ledger, checkpoint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from safeshare.dp.budget import PrivacyBudget
from safeshare.dp.discovery import DiscoveryPlan
from safeshare.dp.kinds import KindsPlan
from safeshare.dp.ledger import Ledger
from safeshare.errors import BudgetError, InputError
from safeshare.release import Reading, SynthesisSettings, release
from safeshare.synth.pe.synthesizer import QUALITY_WARNING

FAST = {"iterations": 3, "samples_per_iteration": 200}


def test_pe_release_states_its_accounting_and_quality_and_resumes(tmp_path, fair):
    frame, schema = fair
    ledger = tmp_path / "ledger.sqlite"
    options = {**FAST, "checkpoint": tmp_path / "run"}
    common = dict(reading=Reading(schema=schema, name="fair"), seed=0, ledger=ledger)
    result = release(
        frame,
        out=tmp_path / "out",
        **common,
        settings=SynthesisSettings(method="pe", epsilon=1.0, pe_options=options),
    )
    card = json.loads((tmp_path / "out" / "card.json").read_text())
    assert card["method"] == "pe" and card["domain_source"] == "schema"
    model = card["model"]
    assert model["iterations"] == 3 and model["samples_per_iteration"] == [200] * 3
    assert model["sigma"] == pytest.approx((3 / (2 * card["budget"]["rho"])) ** 0.5)
    assert model["gdp_mu"] == pytest.approx(3**0.5 / model["sigma"])
    # the exact GDP epsilon of the histograms is below the budget the RDP accountant fills
    assert model["epsilon_exact_gdp"] < card["epsilon_spent"] <= 1.0 + 1e-9
    assert "Gaussian DP" in model["accountant"] and model["public"] and model["private"]
    assert [i["step"] for i in card["budget"]["items"]] == [
        f"pe: nearest-neighbour histogram {t}/3" for t in (1, 2, 3)
    ]
    # the quality warning is stated next to the figures, in the card, report and warnings
    assert model["quality_warning"] == QUALITY_WARNING and QUALITY_WARNING in card["notes"]
    assert QUALITY_WARNING in result.warnings
    html = (tmp_path / "out" / "report.html").read_text()
    assert "0.52" in html and "far below AIM" in html
    assert card["rows_out"] == len(result.synthetic) > 0
    assert set(result.synthetic.columns) == set(frame.columns) - {
        n for n, c in card["columns"].items() if c["dropped"]
    }
    assert Ledger(ledger).find("fair").spent_epsilon == 1.0

    # the same command again resumes from the checkpoint: no second charge, the same DP votes
    assert (tmp_path / "run" / "spend.json").is_file()
    again = release(
        frame,
        out=tmp_path / "b",
        **common,
        settings=SynthesisSettings(method="pe", holdout_fraction=0, pe_options=options),
    )
    status = Ledger(ledger).find("fair")
    assert status.releases == 1 and status.spent_epsilon == 1.0
    assert again.card["model"]["sigma"] == model["sigma"]
    with pytest.raises(InputError, match="belongs to another release"):
        release(
            frame,
            out=tmp_path / "c",
            **common,
            settings=SynthesisSettings(method="pe", epsilon=2.0, pe_options=options),
        )


def test_a_folder_that_lost_its_measured_populations_is_refused(tmp_path, fair):
    """The receipt counts the histograms the run measured: a folder whose populations are gone
    but whose receipt stays would measure them again without a charge, so it is refused (and
    nothing is written); with its populations back, it resumes."""
    frame, schema = fair
    ledger = tmp_path / "ledger.sqlite"
    common = dict(reading=Reading(schema=schema, name="fair"), seed=0, ledger=ledger)
    settings = SynthesisSettings(
        method="pe", epsilon=1.0, pe_options={**FAST, "checkpoint": tmp_path / "run"}
    )
    release(frame, out=tmp_path / "out", **common, settings=settings)
    run = tmp_path / "run"
    assert json.loads((run / "spend.json").read_text())["saved"]["measured_histograms"] == 3
    shutil.copytree(run, tmp_path / "copy")
    for path in run.iterdir():
        if path.name != "spend.json":
            path.unlink()
    with pytest.raises(InputError, match="paid for 3 measured histogram"):
        release(frame, out=tmp_path / "again", **common, settings=settings)
    assert not (tmp_path / "again").exists()
    shutil.rmtree(run)
    shutil.copytree(tmp_path / "copy", run)
    release(frame, out=tmp_path / "again", **common, settings=settings)
    assert Ledger(ledger).find("fair").releases == 1


class StopError(Exception):
    """A run killed in the middle (raised from the progress callback)."""


def _stop_before_histogram(t: int):
    def progress(step: str, done: float) -> None:
        if step.startswith(f"private votes {t}/"):
            raise StopError

    return progress


def _populations(folder: Path) -> list[pd.DataFrame]:
    return [pd.read_parquet(p) for p in sorted(folder.glob("population-*.parquet"))]


def test_a_checkpoint_without_a_schema_reuses_the_domain_it_paid_for(tmp_path, fair, monkeypatch):
    frame, _ = fair  # no schema: every column's domain is discovered with DP
    ledger = tmp_path / "ledger.sqlite"
    common = dict(
        reading=Reading(name="fair"),
        seed=3,
        ledger=ledger,
        total_budget=PrivacyBudget(10.0, 1e-6),
    )
    whole = release(
        frame,
        out=tmp_path / "whole",
        **common,
        settings=SynthesisSettings(method="pe", pe_options={**FAST, "checkpoint": tmp_path / "a"}),
    )
    assert whole.card["domain_source"] != "schema"
    options = {**FAST, "checkpoint": tmp_path / "b"}
    with pytest.raises(StopError):
        release(
            frame,
            out=tmp_path / "killed",
            progress=_stop_before_histogram(3),
            **common,
            settings=SynthesisSettings(method="pe", pe_options=options),
        )
    receipt = json.loads((tmp_path / "b" / "spend.json").read_text())
    saved = [c["name"] for c in receipt["saved"]["domain"]["columns"]]
    assert saved == list(whole.synthetic.columns)  # the DP domain, kept for the resume
    kinds = {g["name"]: g["kind"] for g in receipt["saved"]["kinds"]}  # and the DP kinds
    assert kinds == {name: c["kind"] for name, c in whole.card["columns"].items()}
    assert not (tmp_path / "killed").exists()

    def measured_again(*args: object) -> None:
        raise AssertionError("the domain or the kinds were measured again on resume")

    monkeypatch.setattr(DiscoveryPlan, "run", measured_again)
    monkeypatch.setattr(KindsPlan, "run", measured_again)
    resumed = release(
        frame,
        out=tmp_path / "resumed",
        **common,
        settings=SynthesisSettings(method="pe", pe_options=options),
    )
    # the same population as the uninterrupted run, step by step, and the same release
    for ours, theirs in zip(
        _populations(tmp_path / "b"), _populations(tmp_path / "a"), strict=True
    ):
        pd.testing.assert_frame_equal(ours, theirs)
    assert len(_populations(tmp_path / "b")) == 3
    pd.testing.assert_frame_equal(resumed.synthetic, whole.synthetic)
    assert any("not discovered again" in n for n in resumed.card["notes"])
    status = Ledger(ledger).find("fair")
    assert status.releases == 2 and status.spent_epsilon == 2.0  # a and b, each once


def test_a_resume_with_another_schema_is_refused(tmp_path, fair):
    frame, schema = fair
    ledger = tmp_path / "ledger.sqlite"
    options = {**FAST, "checkpoint": tmp_path / "run"}
    settings = SynthesisSettings(method="pe", pe_options=options)
    common = dict(settings=settings, seed=0, ledger=ledger)
    with pytest.raises(StopError):
        release(
            frame,
            out=tmp_path / "o",
            progress=_stop_before_histogram(2),
            reading=Reading(name="fair"),
            **common,
        )
    with pytest.raises(InputError, match=r"declares column .* differently"):
        release(frame, out=tmp_path / "o", reading=Reading(schema=schema, name="fair"), **common)
    assert Ledger(ledger).find("fair").releases == 1


def test_refusals_cost_nothing(tmp_path, fair):
    frame, _ = fair
    ledger = tmp_path / "ledger.sqlite"
    with pytest.raises(BudgetError, match="samples_per_iteration <="):
        release(
            frame,
            out=tmp_path / "o",
            ledger=ledger,
            settings=SynthesisSettings(
                method="pe",
                epsilon=0.01,
                pe_options={"iterations": 10, "samples_per_iteration": 5000},
            ),
            reading=Reading(schema=fair[1], name="fair"),
        )
    assert Ledger(ledger).find("fair") is None and not Path(tmp_path / "o").exists()
