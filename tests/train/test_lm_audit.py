"""The one-run canary audit of the language model's training: memorizing vs DP procedures."""

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("opacus")

from safeshare.errors import InputError
from safeshare.train.audit import perfect_guess_bound
from safeshare.train.extraction import draw_digit_canaries
from safeshare.train.language_model import LanguageModelSettings
from safeshare.train.lm_audit import audit_language_model
from tests.conftest import SHARED, needs_shared

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*were cut to it"),
    pytest.mark.usefixtures("one_torch_thread"),
]

# canaries "my number is d d d d d d" are 23 bytes: a 32-byte context holds them whole
SETTINGS = LanguageModelSettings(context=32, width=48, layers=1, heads=2, batch_size=20)
DELTA = 1e-5


def sms_texts(rows: int) -> list[str]:
    assert SHARED is not None
    path = SHARED / "text" / "sms_spam_collection.tsv"
    frame = pd.read_csv(path, sep="\t", header=None, names=["label", "text"], quoting=3)
    return [str(t) for t in frame["text"][:rows]]


def test_canaries_are_inserted_by_independent_fair_coins():
    drawn = draw_digit_canaries(2000, digits=6, rng=np.random.default_rng(0))
    assert len(set(drawn.secrets.tolist())) == 2000
    assert 900 < int(drawn.inserted.sum()) < 1100  # Binomial(2000, 1/2): sd 22
    again = draw_digit_canaries(2000, digits=6, rng=np.random.default_rng(1))
    assert not np.array_equal(drawn.inserted, again.inserted)
    with pytest.raises(InputError, match="at most 50"):
        draw_digit_canaries(60, digits=2, rng=np.random.default_rng(0))


def test_perfect_guesses_cap_the_bound():
    assert perfect_guess_bound(80, 80, delta=DELTA) == pytest.approx(2.94, abs=0.01)
    assert perfect_guess_bound(500, 500, delta=DELTA) > 4.5
    with pytest.raises(InputError, match="positive whole number"):
        perfect_guess_bound(0, 10)


@needs_shared
def test_a_memorizing_procedure_audits_far_above_a_dp_one():
    """Without DP, 160 canaries among 40 texts are memorized: the bound reaches its cap
    (about 2.9); DP-SGD at epsilon = 2 audits at (about) 0, never above its claim."""
    texts = sms_texts(40)
    memorizing = LanguageModelSettings(**{**SETTINGS.__dict__, "epochs": 100.0})
    leaky = audit_language_model(
        texts, None, memorizing, canaries=160, delta=DELTA, rng=np.random.default_rng(0)
    )
    assert leaky.claimed_epsilon is None and leaky.membership.auc > 0.95
    assert leaky.audit.epsilon > 1.2 and leaky.audit.epsilon <= leaky.cap + 1e-9
    assert leaky.exposure.inserted_mean > leaky.exposure.held_out_mean + 5
    assert "claims no DP guarantee" in leaky.readings()[0]

    private = LanguageModelSettings(**{**SETTINGS.__dict__, "epochs": 4.0})
    dp = audit_language_model(
        texts, 2.0, private, canaries=160, delta=DELTA, rng=np.random.default_rng(0)
    )
    assert dp.claimed_epsilon is not None and dp.claimed_epsilon <= 2.0
    assert dp.audit.epsilon <= dp.claimed_epsilon
    assert leaky.audit.epsilon > dp.audit.epsilon + 1.0
    assert "consistent with the claimed epsilon" in dp.readings()[0]
    described = dp.describe()
    assert described["one_run"]["delta"] == DELTA and described["training_texts"] == 40
    assert "my number" not in str(described)  # aggregates only, no canary text


def test_audit_refuses_too_few_canaries_to_split():
    with pytest.raises(InputError, match="whole number >= 2"):
        audit_language_model(["some text"] * 30, None, SETTINGS, canaries=1,
                             rng=np.random.default_rng(0))  # fmt: skip
