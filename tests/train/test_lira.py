"""LiRA with shadow models: it catches an overfit MLP and sees nothing in a DP one at small epsilon."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import softmax

from safeshare.data import Domain, Table
from safeshare.errors import InputError
from safeshare.train.lira import balanced_membership, lira_scores, logit_confidence
from safeshare.train.membership import auc_of

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from safeshare.train.tabular import train_tabular, train_tabular_nonprivate  # noqa: E402
from tests.conftest import SHARED, needs_shared  # noqa: E402

TARGET = "income>50K"


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Two shared cores: one torch thread is several times faster than two fighting."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def adult(records: int) -> Table:
    import pandas as pd

    assert SHARED is not None
    sizes = json.loads((SHARED / "adult-pgm" / "adult-domain.json").read_text())
    frame = pd.read_csv(SHARED / "adult-pgm" / "adult.csv")
    table = Table({n: frame[n].to_numpy() for n in sizes}, Domain.from_sizes(sizes))
    return table.take(np.random.default_rng(0).choice(len(table), records, replace=False))


def test_logit_confidence_is_the_log_odds_of_the_true_class() -> None:
    logits = np.random.default_rng(0).normal(size=(50, 4))
    labels = np.arange(50) % 4
    p = softmax(logits, axis=1)[np.arange(50), labels]
    assert np.allclose(logit_confidence(logits, labels), np.log(p / (1 - p)))


def test_shadow_membership_is_balanced_and_scores_separate_known_members() -> None:
    rng = np.random.default_rng(3)
    member = balanced_membership(8, 500, rng)
    assert (member.sum(axis=0) == 4).all() and 200 < member[0].sum() < 300
    # confidences: +1 when trained on, noise 0.5; the target trained on the first half
    phi = member * 1.0 + rng.normal(0, 0.5, member.shape)
    target_in = np.arange(500) < 250
    target_phi = target_in * 1.0 + rng.normal(0, 0.5, 500)
    for online in (True, False):
        scores = lira_scores(target_phi, phi, member, online=online)
        assert auc_of(scores[target_in], scores[~target_in]) > 0.8
    with pytest.raises(InputError, match="even"):
        balanced_membership(3, 10, rng)
    with pytest.raises(InputError, match="IN and OUT"):
        lira_scores(target_phi, phi, np.ones_like(member))


@needs_shared
def test_lira_beats_chance_on_an_overfit_mlp_and_not_on_a_dp_one() -> None:
    from safeshare.train.lira import lira_audit

    table = adult(1000)
    seeds = np.random.default_rng(1)

    def overfit(data: Table):
        return train_tabular_nonprivate(
            data, TARGET, epochs=60, batch_size=50, seed=int(seeds.integers(2**31))
        )

    def private(data: Table):
        return train_tabular(data, TARGET, epsilon=0.5, epochs=10, batch_size=50,
                             seed=int(seeds.integers(2**31)), accountant="rdp")  # fmt: skip

    leaky = lira_audit(table, TARGET, overfit, shadows=4, rng=np.random.default_rng(2))
    assert leaky.membership.auc > 0.6
    assert leaky.membership.members == leaky.membership.nonmembers == 500
    low, _ = leaky.membership.tpr_at_fpr[0.01].interval
    assert low > 0.01  # better than guessing at 1% FPR
    assert 0.001 not in leaky.membership.tpr_at_fpr  # 500 non-members cannot resolve 0.1%
    assert leaky.claimed_epsilon is None and "no DP guarantee" in leaky.readings()[0]

    dp = lira_audit(table, TARGET, private, shadows=4, rng=np.random.default_rng(2))
    assert abs(dp.membership.auc - 0.5) < 0.07
    assert dp.claimed_epsilon is not None and dp.claimed_epsilon <= 0.5
    low, _ = dp.membership.tpr_at_fpr[0.01].interval
    assert low <= np.exp(0.5) * 0.01 + 1e-4  # (0.5, delta)-DP: TPR <= e^eps FPR + delta
    assert dp.describe()["membership"]["attack"] == "LiRA (online)"


@needs_shared
@pytest.mark.slow
def test_lira_with_8_shadows_on_4000_adult_records() -> None:
    """The long run: 8 shadows, online and offline (one set of models for both), the overfit
    MLP against DP at epsilon=1."""
    from safeshare.train.lira import lira_audit_both

    table = adult(4000)
    seeds = np.random.default_rng(1)

    def overfit(data: Table):
        return train_tabular_nonprivate(
            data, TARGET, epochs=100, batch_size=100, seed=int(seeds.integers(2**31))
        )

    def private(data: Table):
        return train_tabular(data, TARGET, epsilon=1.0, epochs=10, batch_size=100,
                             seed=int(seeds.integers(2**31)), accountant="rdp")  # fmt: skip

    results = {}
    for name, procedure in (("overfit", overfit), ("dp", private)):
        both = lira_audit_both(table, TARGET, procedure, shadows=8, rng=np.random.default_rng(2))
        for audit in both:
            results[name, audit.online] = audit
            print(name, *audit.readings(), sep="\n  ")
    assert results["overfit", True].membership.auc > 0.6
    assert results["overfit", False].membership.auc > 0.55
    for online in (True, False):
        assert abs(results["dp", online].membership.auc - 0.5) < 0.05


def test_audit_cli_runs_lira_at_the_cards_settings(tmp_path) -> None:
    from pathlib import Path

    typer = pytest.importorskip("typer")
    from typer.testing import CliRunner

    from safeshare.cli.audit import audit_command
    from safeshare.cli.train import train_command
    from safeshare.data.examples import load_example

    app = typer.Typer()
    app.command("train")(train_command)
    app.command("audit")(audit_command)
    frame, schema = load_example("fair")
    data = tmp_path / "fair.csv"
    frame.iloc[:800].to_csv(data, index=False)
    assert schema.source is not None
    model, out = tmp_path / "model", tmp_path / "audit"
    common = ["--schema", str(Path(schema.source)), "--seed", "0"]
    trained = CliRunner().invoke(app, ["train", str(data), "--target", "religious", "--epsilon",
                                       "1", "--out", str(model), "--epochs", "1", "--batch-size",
                                       "100", "--quiet", "--accountant", "rdp", *common])  # fmt: skip
    assert trained.exit_code == 0, trained.output
    result = CliRunner().invoke(app, ["audit", str(model), "--data", str(data), "--attack", "lira",
                                      "--shadows", "2", "--out", str(out), *common])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "audit.json").read_text())
    assert report["shadows"] == 2 and report["membership"]["attack"] == "LiRA (online)"
    assert report["membership"]["members"] == 400 and 0.35 < report["membership"]["auc"] < 0.65
    assert "2 shadow models" in report["audited"] and report["claimed_epsilon"] <= 1.0
    assert (out / "report.txt").read_text().startswith("LiRA (online, 2 shadow models")
    bad = CliRunner().invoke(app, ["audit", str(model), "--data", str(data), "--attack", "nope",
                                   "--out", str(tmp_path / "x")])  # fmt: skip
    assert isinstance(bad.exception, InputError) and "--attack 'nope'" in str(bad.exception)


@needs_shared
def test_both_variants_from_one_run_equal_the_single_runs() -> None:
    """lira_audit_both trains once; each variant equals lira_audit's with the same draws."""
    from safeshare.train.lira import lira_audit, lira_audit_both

    table = adult(400)

    def procedure(data: Table):  # deterministic: the same half trains the same model
        return train_tabular_nonprivate(data, TARGET, epochs=5, batch_size=50, seed=0)

    online, offline = lira_audit_both(table, TARGET, procedure, shadows=4,
                                      rng=np.random.default_rng(5))  # fmt: skip
    assert online.online and not offline.online and online.shadows == 4
    for variant in (online, offline):
        alone = lira_audit(table, TARGET, procedure, shadows=4, online=variant.online,
                           rng=np.random.default_rng(5))  # fmt: skip
        assert alone.membership.auc == variant.membership.auc
