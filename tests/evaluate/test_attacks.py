"""Planted cases for the attacks: a release that copies training rows, and one that does not."""

import numpy as np
import pytest

from safeshare.data import Table
from safeshare.evaluate.attack_risk import (
    EvaluationInputError,
    attack_risk,
    newcombe_difference,
    strongest,
)
from safeshare.evaluate.generalized import from_table
from safeshare.evaluate.inference import inference
from safeshare.evaluate.linkability import linkability
from safeshare.evaluate.linkage import linkage
from safeshare.evaluate.membership import membership_inference
from safeshare.evaluate.memorization import memorization
from safeshare.evaluate.results import Proportion
from safeshare.evaluate.singling_out import singling_out

QUASI = ["region", "age", "education", "sex"]


def run_all(release: Table, train: Table, holdout: Table, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    return {
        "singling out": singling_out(release, train, holdout, rng, attacks=300),
        "linkability": linkability(release, train, holdout, rng, attacks=300),
        "inference": inference(release, train, holdout, "diagnosis", rng, attacks=300),
        "linkage": linkage(from_table(release), train, holdout, QUASI, rng, attacks=300),
        "linkage tolerant": linkage(
            from_table(release), train, holdout, QUASI, rng, attacks=300, tolerant=True
        ),
    }


def test_a_release_that_copies_training_rows_is_attacked(train, holdout):
    same_size = train.take(np.arange(len(holdout)))
    results = run_all(same_size, same_size, holdout, 0)
    for name, result in results.items():
        assert result.significant, name
        assert result.risk > 0.1, (name, result.risk)
        assert result.beats_baseline, name
        assert "risk (95% interval" in result.reading
    assert results["inference"].risk > 0.8
    assert results["singling out"].risk > 0.5


def test_an_independent_sample_has_no_risk(train, holdout, fresh):
    """Train (3000) and control (1500) differ in size: the risk must still read 0.

    95% intervals: over 4 seeds x 5 attacks, at most 2 of 20 may miss 0 by chance.
    """
    missed = []
    for seed in range(4):
        for name, result in run_all(fresh, train, holdout, seed).items():
            low, high = result.interval
            if not low <= 0 <= high:
                missed.append((seed, name, result.interval))
            else:
                assert "no measurable risk" in result.reading
    assert len(missed) <= 2, missed


def test_memorization_of_copies_and_of_an_independent_sample(train, holdout, fresh):
    same_size = train.take(np.arange(len(holdout)))  # the whole training set is the reference
    copied = memorization(same_size, same_size, holdout, np.random.default_rng(0))
    assert copied.closer_to_train.value > 0.9  # DCR share near 1
    assert copied.copies_of_train.value > 0.4
    assert copied.outlier_copies.value > copied.outlier_baseline.interval[1]
    # a copied record sits on one training record: its NNDR is 0, against unseen records' ratios
    assert copied.low_nndr.interval[0] > copied.low_nndr_baseline.interval[1]
    assert copied.low_dcr["train"]["0.05"] == 0 < copied.low_dcr["holdout"]["0.05"]
    null = memorization(fresh, train, holdout, np.random.default_rng(0))
    assert null.closer_to_train.contains(0.5)
    assert null.outlier_copies.interval[0] <= null.outlier_baseline.interval[1]
    assert null.near_copies.interval[0] <= null.near_baseline.interval[1]
    assert null.low_nndr.interval[0] <= null.low_nndr_baseline.interval[1]
    assert null.low_nndr.interval[1] >= null.low_nndr_baseline.interval[0]


def test_membership_inference_planted(train, holdout, fresh):
    copied = membership_inference(
        train.take(np.arange(2000)), train, holdout, np.random.default_rng(0)
    )
    for result in copied:
        assert result.significant, result
    assert copied[0].auc > 0.75 and copied[0].tpr_at_low_fpr > 0.3
    null = membership_inference(fresh, train, holdout, np.random.default_rng(0))
    for result in null:
        assert result.auc_interval[0] <= 0.5 <= result.auc_interval[1], result
        assert "no better than guessing" in result.reading


def test_risk_formula_and_interval_by_hand():
    # main 60%, control 20% of 500: risk (0.6 - 0.2) / 0.8 = 0.5
    result = attack_risk("x", "t", main=300, control=100, baseline=10, attacks=500)
    assert result.risk == pytest.approx(0.5)
    low, high = newcombe_difference(Proportion.of(300, 500), Proportion.of(100, 500))
    assert result.interval == pytest.approx((low / 0.8, high / 0.8))
    # Newcombe's worked example (Statistics in Medicine 1998, table II, 56/70 - 48/80): 0.0524-0.3339
    low, high = newcombe_difference(Proportion.of(56, 70), Proportion.of(48, 80))
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)


def test_a_handful_of_attacks_is_read_as_not_measured():
    # five singling-out predicates, all hits: a point estimate of 100% beside an interval of
    # 0-100% measured nothing, and the reading says so instead of "no measurable risk"
    few = attack_risk("few", "t", main=5, control=4, baseline=0, attacks=5)
    assert few.reading.startswith("not measured: 5 attack(s) could be made, too few")
    many = attack_risk("many", "t", main=10, control=10, baseline=0, attacks=500)
    assert many.reading.startswith("no measurable risk")


def test_an_attack_no_better_than_guessing_warns():
    result = attack_risk("weak", "t", main=10, control=10, baseline=12, attacks=500)
    assert not result.beats_baseline and "no better than random guessing" in result.warnings[0]


def test_more_attacks_than_records_is_refused(train, holdout):
    small = train.take(np.arange(50))
    with pytest.raises(EvaluationInputError, match="at most 50"):
        singling_out(small, train, holdout, np.random.default_rng(0), attacks=100)
    with pytest.raises(EvaluationInputError, match="at most"):
        inference(
            train,
            train,
            holdout.take(np.arange(40)),
            "diagnosis",
            np.random.default_rng(0),
            attacks=100,
        )


def test_the_strongest_attack_is_the_surest_success_not_the_widest_interval():
    # 1 of 2 on train, 0 of 2 on control: risk 0.5 with an interval across 0 to 1
    wide = attack_risk("singling out (1 column)", "t", main=1, control=0, baseline=0, attacks=2)
    sure = attack_risk("inference", "t", main=300, control=200, baseline=10, attacks=500)
    surer = attack_risk("linkability", "t", main=320, control=200, baseline=10, attacks=500)
    assert not wide.significant and wide.interval[1] > surer.interval[1]
    assert strongest([wide, sure, surer]) is surer
    assert strongest([wide]) is None


def test_given_quasi_identifiers_are_not_warned_as_undeclared(train, holdout, fresh):
    from safeshare.evaluate.assessment import EvaluationOptions, assess

    options = EvaluationOptions(attacks=100, quasi_identifiers=("region", "age"), ml=False)
    found = assess(fresh, train, holdout, np.random.default_rng(0), options)
    assert found.quasi_identifier_source == "given"
    assert not [w for w in found.warnings if "no column is declared" in w]
    headline = found.headline()["risk"]
    surest = strongest(found.attacks)
    assert headline["worst_attack"] == (None if surest is None else surest.name)
    assert ("strongest" in headline["reading"]) == bool(headline["significant_attacks"])


def test_copies_of_the_rarest_records_make_the_verdict_red_on_their_own(train, holdout, fresh):
    from safeshare.engine import default_engine
    from safeshare.evaluate.memorization import rarity

    rarest = np.argsort(-rarity(train, train, default_engine()), kind="stable")[:20]
    planted = Table(
        {
            name: np.concatenate([fresh.column(name)[:-20], train.column(name)[rarest]])
            for name in fresh.columns
        },
        fresh.domain,
    )
    clean = memorization(fresh, train, holdout, np.random.default_rng(0))
    found = memorization(planted, train, holdout, np.random.default_rng(0))

    assert clean.verdict()[0] != "bad"
    assert found.outlier_copies.trials == 30  # 1% of the 3,000 training records, all examined
    assert found.outlier_copies.value >= 20 / 30
    risk_class, reading = found.verdict()
    assert risk_class == "bad" and "copies rare training records" in reading
    # distances alone would not tell: 20 copies among 3,000 barely move the DCR share
    assert not found.closer_to_train.interval[0] > 0.55


def _widened(table: Table, seed: int) -> Table:
    """``table`` with 8 more independent columns of 6 categories: 15 columns, where a record
    within one column of another is rare by chance (in 7 small columns it is the rule)."""
    from safeshare.data import Column, Domain, Kind

    rng = np.random.default_rng(seed)
    extra = {f"x{i}": rng.integers(0, 6, len(table)) for i in range(8)}
    domain = Domain(
        (*table.domain.columns, *(Column(n, Kind.CATEGORICAL, categories=tuple("abcdef"))
                                  for n in extra))
    )  # fmt: skip
    return Table({**{n: table.column(n) for n in table.columns}, **extra}, domain)


def test_near_copies_of_the_rarest_records_make_the_verdict_red(train, holdout, fresh):
    """The 20 rarest training records released with one column changed each: no exact copy, so
    only the near-copy check finds them."""
    from safeshare.engine import default_engine
    from safeshare.evaluate.memorization import near_copy_distance, rarity

    train, holdout, fresh = _widened(train, 1), _widened(holdout, 2), _widened(fresh, 3)
    rng = np.random.default_rng(5)
    rarest = np.argsort(-rarity(train, train, default_engine()), kind="stable")[:20]
    columns = list(train.columns)
    changed = {name: train.column(name)[rarest].copy() for name in columns}
    for i, name in enumerate(rng.choice(columns, size=20)):
        size = train.domain[name].size
        changed[name][i] = (changed[name][i] + rng.integers(1, size)) % size  # another code
    planted = Table(
        {n: np.concatenate([fresh.column(n)[:-20], changed[n]]) for n in columns}, fresh.domain
    )
    found = memorization(planted, train, holdout, np.random.default_rng(0))
    assert found.outlier_copies.interval[0] <= found.outlier_baseline.interval[1]  # no copies
    assert found.near_copies.value >= 20 / 30 and near_copy_distance(len(columns)) == 1 / 15
    risk_class, reading = found.verdict()
    assert risk_class == "bad" and "near copies of rare training records" in reading
    clean = memorization(fresh, train, holdout, np.random.default_rng(0))
    assert clean.verdict()[0] != "bad"
    assert clean.near_copies.interval[0] <= clean.near_baseline.interval[1]


def test_generalized_cells_are_read_as_the_codes_they_cover(train, holdout):
    """The training records released with age in ranges of 8 codes: the distance attacks read a
    range at the distance of its closest code (0 for the record it came from), so inference
    does about as well as on a copy, where an age drawn at random inside its range misleads
    it; a release with no range reads the same either way."""
    from safeshare.evaluate.generalized import CellSets

    masks, rows = {}, {}
    for column in train.domain:
        codes = train.column(column.name).astype(np.int64)
        if column.name == "age":  # ranges of 8 codes
            blocks = np.arange(column.size) // 8
            masks[column.name] = blocks[None, :] == np.unique(blocks)[:, None]
            rows[column.name] = codes // 8
        else:
            masks[column.name], rows[column.name] = np.eye(column.size, dtype=bool), codes
    zeros = dict.fromkeys(train.columns, 0)
    cells = CellSets(train.domain, masks, rows, zeros, dict(zeros))
    drawn = cells.impute(np.random.default_rng(1))
    covers = cells.covers()
    assert list(covers) == ["age"]

    def read(attack, **extra) -> float:
        return attack(
            drawn, train, holdout, rng=np.random.default_rng(2), attacks=300, **extra
        ).risk

    def infer(release, train, holdout, **options):
        return inference(release, train, holdout, "diagnosis", **options)

    copy_risk = infer(train, train, holdout, rng=np.random.default_rng(2), attacks=300).risk
    assert read(infer, covers=covers) > read(infer) + 0.2  # 0.96 against 0.67 when drawn
    assert read(infer, covers=covers) == pytest.approx(copy_risk, abs=0.06)
    assert read(linkability, covers=covers) >= read(linkability)
    # singling out writes "age in the range" rather than one drawn age: about a copy's power
    copied = singling_out(train, train, holdout, rng=np.random.default_rng(2), attacks=300).risk
    assert read(singling_out, covers=covers) > read(singling_out)  # 0.26 against 0.18
    assert read(singling_out, covers=covers) == pytest.approx(copied, abs=0.06)
    plain = from_table(train)
    assert plain.covers() == {}
    same = [inference(train, train, holdout, "diagnosis", np.random.default_rng(3), attacks=200,
                      covers=c).risk for c in (None, plain.covers())]  # fmt: skip
    assert same[0] == same[1]


def test_linkage_on_a_release_that_names_no_one_is_no_risk_and_no_weak_attack(train, holdout):
    # every quasi-identifier '*': no one can be linked, and a guesser that claimed a random
    # record for everyone would read the diagnosis at its base rate; the baseline makes the
    # attack's own claims (none), so the safe release reads as safe, not as a weak attack
    import pandas as pd

    from safeshare.evaluate.generalized import cell_sets

    frame = pd.DataFrame({c.name: ["*"] * len(train) for c in train.domain})
    frame["diagnosis"] = [train.domain["diagnosis"].labels()[v] for v in train.column("diagnosis")]
    safe = cell_sets(frame, train.domain)
    result = linkage(safe, train, holdout, QUASI, np.random.default_rng(0), attacks=300)
    assert result.main.value == 0.0 and result.baseline.value == 0.0
    assert result.beats_baseline and not result.warnings
    copied = linkage(
        from_table(train), train, holdout, QUASI, np.random.default_rng(0), attacks=300
    )
    assert copied.main.value > copied.baseline.value  # a copy: its claims beat random ones
