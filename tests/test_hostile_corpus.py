"""The hostile corpus: every command, each option given hostile values, each input a hostile file.

Each case starts from a command line that works (small data, cheap settings) and spoils one
thing: an option's value (not a number, NaN, infinities, negative, zero, enormous, empty,
markup, a formula) or an input file (missing, a folder, empty, binary, not UTF-8, truncated,
deeply nested, the wrong kind).  Whatever the case, the run

- ends in exit 0 (the value was fine), or in exit 2 with one ``error:`` line (or the
  command-line parser's usage error) and no traceback;
- takes under 30 s (a hang is a failure);
- spends no budget when it fails, and writes nothing at ``--out`` then;
- changes no file outside ``--out`` (the inputs, the ledger of a failed run);
- never prints the planted private values.

``obfuscate serve`` is stopped where it would start listening: reaching that point is its
success.
"""

from __future__ import annotations

import hashlib
import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.cli import main
from safeshare.dp.ledger import Ledger
from tests.conftest import SHARED, needs_shared

pytestmark = [pytest.mark.slow, needs_shared, pytest.mark.usefixtures("one_torch_thread")]

CANARY = "QQCANARY"  # planted in the data: it must appear in no message
HANG_SECONDS = 30
# a run stopped by a figure it released with DP (a label's noisy count) keeps its spend: the
# figure is out, and a refund would let a retry ask again for free
DP_FIGURE = "(a DP count)"

FLOATS = ["nan", "inf", "-inf", "-1", "0", "1e308", "1e-300", "", "x", "1,5"]
INTEGERS = ["-1", "0", "99999999999999999999", "1.5", "", "x", "nan", "4294967297"]
NAMES = ["", "%", "[/]", "no_such_column", "=HYPERLINK(1)", ",", "age,age", "_", "a b"]
CHOICES = ["", "x", "MST ", "../x", "=1"]
FILES = [
    "missing.csv",
    "folder",
    "empty.csv",
    "binary.bin",
    "latin1.csv",
    "header_only.csv",
    "deep.yaml",
    "date.yaml",
    "ragged.csv",
    "nul.csv",
    "huge_line.csv",
]

# command -> (its working arguments, {option: hostile values}); "{x}" names a fixture file,
# "@" an option's place for a positional argument
COMMANDS: dict[str, tuple[list[str], dict[str, list[str]]]] = {
    "release": (
        ["release", "@DATA", "--epsilon", "1", "--schema", "{schema}"],
        {
            "@DATA": FILES,
            "--epsilon": FLOATS,
            "--delta": FLOATS,
            "--holdout-fraction": FLOATS,
            "--rows": INTEGERS,
            "--total-epsilon": FLOATS,
            "--total-delta": FLOATS,
            "--method": CHOICES,
            "--engine": CHOICES,
            "--output-format": CHOICES,
            "--schema": FILES,
            "--memory-limit": ["", "x", "-1GB", "99999TB", "0"],
        },
    ),
    "release aim": (
        ["release", "{fair}", "--method", "aim", "--workload", "2way", "--schema", "{schema}"],
        {
            "--workload": ["", "x", "1way", *FILES[:4], "deep.yaml"],
            "--max-model-size": FLOATS,
            "--time-limit": FLOATS,
        },
    ),
    "release pe": (
        ["release", "{fair}", "--method", "pe", "--iterations", "1", "--samples", "100",
         "--schema", "{schema}"],
        {
            "--iterations": INTEGERS,
            "--samples": INTEGERS,
            "--lookahead": INTEGERS,
            "--offspring": INTEGERS,
            "--selection": CHOICES,
            "--neighbour-search": CHOICES,
        },
    ),
    "release text": (
        ["release", "{texts}", "--method", "pe", "--text-column", "text", "--label-column",
         "label", "--label-names", "ham=ham,spam=spam", "--iterations", "1", "--samples",
         "20", "--epsilon", "4", "--delta", "1e-5"],
        {
            "--text-column": NAMES,
            "--label-column": NAMES,
            "--label-names": ["", "=", "a", "ham=", "=ham", "ham=a,ham=b", "x=y"],
            "--api": CHOICES,
            "--vocabulary": FILES[:5],
            "--max-new-tokens": INTEGERS,
        },
    ),
    "anonymize": (
        ["anonymize", "@DATA", "--config", "{config}"],
        {"@DATA": FILES, "--config": [*FILES, "config_k0.yaml", "config_qi.yaml"]},
    ),
    "evaluate": (
        ["evaluate", "--train", "{fair}", "--holdout", "{holdout}", "--release", "{fair}",
         "--no-ml", "--attacks", "30"],
        {
            "--train": FILES,
            "--release": FILES,
            "--aux": FILES[:6],
            "--attacks": INTEGERS,
            "--numeric-codes": INTEGERS,
            "--neighbours": INTEGERS,
            "--population-size": INTEGERS,
            "--quasi-identifiers": NAMES,
            "--secret": NAMES,
            "--hierarchy": ["", "x", "age=", "=x", "age=missing.csv", "age=binary.bin"],
        },
    ),
    "risk": (
        ["risk", "@DATA", "--quasi-identifiers", "age,sex"],
        {
            "@DATA": FILES,
            "--quasi-identifiers": NAMES,
            "--population-size": INTEGERS,
            "--threshold": FLOATS,
            "--population": FILES[:6],
        },
    ),
    "pac": (
        ["pac", "--data", "{fair}", "--function", "blackbox:mean_age", "--mi", "1",
         "--samples", "40"],
        {
            "--data": FILES,
            "--function": ["", "x", ":f", "blackbox:", "nosuch:f", "blackbox:raises",
                           "blackbox:text", "blackbox:nan", "os:getcwd"],
            "--mi": FLOATS,
            "--samples": INTEGERS,
            "--confidence": FLOATS,
            "--workers": INTEGERS,
        },
    ),
    "plan": (
        ["plan", "--records", "10000", "--epsilon", "1", "--epochs", "2"],
        {
            "--records": INTEGERS,
            "--users": INTEGERS,
            "--epsilon": FLOATS,
            "--delta": FLOATS,
            "--epochs": INTEGERS,
            "--max-steps": INTEGERS,
            "--batch-sizes": ["", "0", "-5", "a", "1,1", "99999999999", ",,"],
            "--accountant": CHOICES,
        },
    ),
    "train": (
        ["train", "@DATA", "--target", "religious", "--epsilon", "2", "--epochs", "1",
         "--batch-size", "100", "--schema", "{schema}"],
        {
            "@DATA": FILES,
            "--target": NAMES,
            "--epsilon": FLOATS,
            "--delta": FLOATS,
            "--epochs": INTEGERS,
            "--batch-size": INTEGERS,
            "--hidden": INTEGERS,
            "--learning-rate": FLOATS,
            "--max-grad-norm": FLOATS,
            "--clipping": CHOICES,
            "--accountant": CHOICES,
            "--user-column": NAMES,
            "--max-records-per-user": INTEGERS,
            "--device": ["", "cuda", "cuda:99", "tpu", "cpu:0"],
            "--total-epsilon": FLOATS,
        },
    ),
    "train language model": (
        ["train", "{texts}", "--language-model", "--text-column", "text", "--epsilon", "8",
         "--context", "32", "--width", "16", "--epochs", "1", "--batch-size", "8",
         "--accountant", "rdp"],
        {
            "--context": INTEGERS,
            "--layers": INTEGERS,
            "--heads": INTEGERS,
            "--holdout-fraction": FLOATS,
            "--text-column": NAMES,
        },
    ),
    "audit": (
        ["audit", "@MODEL", "--data", "{fair}", "--schema", "{schema}", "--canaries", "40"],
        {
            "@MODEL": ["missing", "folder", "model_bad_card", "model_no_weights",
                       "model_bad_weights", "empty.csv"],
            "--canaries": INTEGERS,
            "--shadows": INTEGERS,
            "--significance": FLOATS,
            "--attack": CHOICES,
            "--kind": CHOICES,
            "--data": FILES,
        },
    ),
    "ledger list": (["ledger", "list", "--ledger", "{ledger}"], {"--ledger": FILES}),
    "ledger set-total": (
        ["ledger", "set-total", "@DATASET", "--epsilon", "5", "--ledger", "{ledger}"],
        {"--epsilon": FLOATS, "--delta": FLOATS, "--ledger": FILES, "@DATASET": NAMES},
    ),
    "obfuscate train": (
        ["obfuscate", "train", "--data", "{texts}", "--steps", "1", "--max-length", "8",
         "--batch-size", "4"],
        {
            "--data": FILES,
            "--text-column": NAMES,
            "--label-column": NAMES,
            "--steps": INTEGERS,
            "--weight": FLOATS,
            "--batch-size": INTEGERS,
            "--max-length": INTEGERS,
            "--attacker": CHOICES,
            "--model": ["", "x", "folder", "binary.bin", "empty.gguf", "llm-nope"],
        },
    ),
    "obfuscate attack": (
        ["obfuscate", "attack", "--transform", "{transform}", "--data", "{texts}", "--public",
         "{public}", "--inverter-steps", "0", "--sigmas", "", "--limit", "4", "--max-length",
         "8"],
        {
            "--transform": ["missing", "folder", "model_bad_card", "empty.csv"],
            "--public": FILES,
            "--sigmas": ["x", "-1", "nan", "0", ",", "inf", "1e308"],
            "--inverter-steps": INTEGERS,
            "--limit": INTEGERS,
            "--beam": INTEGERS,
            "--max-length": INTEGERS,
            "--positive": NAMES,
        },
    ),
    "obfuscate serve": (
        ["obfuscate", "serve"],
        {
            "--port": INTEGERS,
            "--host": ["", "256.1.1.1", "example.invalid", "0.0.0.0", "::"],
            "--max-tokens": INTEGERS,
            "--max-texts": INTEGERS,
            "--max-body-bytes": INTEGERS,
            "--parallel": INTEGERS,
            "--model": ["", "x", "folder", "binary.bin", "empty.gguf"],
        },
    ),
    "demo": (
        ["demo", "--epsilon", "1"],
        {"--dataset": CHOICES, "--epsilon": FLOATS, "--delta": FLOATS},
    ),
}  # fmt: skip

_NO_OUT = ("plan", "ledger list", "ledger set-total", "obfuscate serve")


def _cases() -> Iterator[tuple[str, str, str]]:
    for command, (_, options) in COMMANDS.items():
        for option, values in options.items():
            for value in values:
                yield command, option, value


CASES = list(_cases())


def _write_files(folder: Path) -> None:
    """The hostile files the cases name, beside the working inputs."""
    (folder / "folder").mkdir()
    (folder / "empty.csv").write_bytes(b"")
    (folder / "empty.gguf").write_bytes(b"")
    (folder / "binary.bin").write_bytes(bytes(range(256)) * 8)
    (folder / "latin1.csv").write_bytes("age,name\n31,Jos\xe9\n".encode("latin-1"))
    (folder / "header_only.csv").write_text("age,sex,religious\n")
    (folder / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    (folder / "date.yaml").write_text("columns:\n  age: {kind: numeric, min: 2020-13-45}\n")
    (folder / "ragged.csv").write_text("age,sex,religious\n31,male\n40,female,2,9\n")
    (folder / "nul.csv").write_bytes(b"age,sex\n31,ma\x00le\n")
    (folder / "huge_line.csv").write_text("age,sex\n" + "1" * 2_000_000 + ",male\n")
    (folder / "config_k0.yaml").write_text(
        "quasi_identifiers:\n  age: {hierarchy: auto}\nprivacy:\n  k: 0\n"
    )
    (folder / "config_qi.yaml").write_text(
        "quasi_identifiers:\n  nosuch: {hierarchy: auto}\nprivacy:\n  k: 5\n"
    )
    for name in ("model_bad_card", "model_no_weights", "model_bad_weights"):
        (folder / name).mkdir()
    (folder / "model_bad_card" / "card.json").write_text("{not json")
    (folder / "model_no_weights" / "card.json").write_text(json.dumps({"method": "dp-sgd"}))
    (folder / "model_bad_weights" / "card.json").write_text(json.dumps({"method": "dp-sgd"}))
    (folder / "model_bad_weights" / "model.safetensors").write_bytes(b"not weights")
    (folder / "blackbox.py").write_text(
        "import math\n"
        "def mean_age(frame):\n    return float(frame['age'].astype(float).mean())\n"
        "def raises(frame):\n    raise ValueError(f'{frame.iloc[0].tolist()}')\n"
        "def text(frame):\n    return 'a text'\n"
        "def nan(frame):\n    return math.nan\n"
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The working inputs (a canary planted in each) and the hostile files, in one folder."""
    from safeshare.data.examples import load_example

    assert SHARED is not None
    folder = tmp_path_factory.mktemp("corpus")
    _write_files(folder)
    frame, schema = load_example("fair")
    frame = frame.iloc[:1200].copy()
    frame["note"] = np.where(np.arange(len(frame)) == 7, CANARY, "none")
    frame.iloc[:900].to_csv(folder / "fair.csv", index=False)
    frame.iloc[900:].to_csv(folder / "holdout.csv", index=False)
    schema_text = Path(str(schema.source)).read_text()
    (folder / "schema.yaml").write_text(
        schema_text + "  note: {kind: categorical, categories: [none, other]}\n"
    )
    (folder / "config.yaml").write_text(
        "quasi_identifiers:\n  age: {hierarchy: auto}\n  sex: {hierarchy: auto}\nprivacy:\n  k: 5\n"
    )
    texts = pd.read_csv(
        SHARED / "text" / "sms_spam_collection.tsv",
        sep="\t",
        header=None,
        names=["label", "text"],
        quoting=3,
    ).iloc[:48]
    texts.loc[5, "text"] = f"call {CANARY} on 555 0199 now"
    texts.to_csv(folder / "texts.csv", index=False)
    (folder / "public.txt").write_text("a public text\nanother public line of text\n" * 20)
    code = main(
        ["obfuscate", "train", "--data", str(folder / "texts.csv"), "--steps", "1",
         "--max-length", "8", "--batch-size", "4", "--out", str(folder / "transform"), "-q"]
    )  # fmt: skip
    assert code == 0
    return folder


def _fingerprints(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _argv(command: str, option: str, value: str, folder: Path, out: Path) -> list[str]:
    """The command's working line with ``option`` (or a ``@`` place) set to ``value``."""
    base, _ = COMMANDS[command]
    named = {
        stem: str(folder / name)
        for stem, name in [("fair", "fair.csv"), ("holdout", "holdout.csv"),
                           ("schema", "schema.yaml"), ("config", "config.yaml"),
                           ("texts", "texts.csv"), ("public", "public.txt"),
                           ("transform", "transform"), ("ledger", str(out.parent / "ledger.sqlite")),
                           ("@DATA", "fair.csv"), ("@MODEL", "model"), ("@DATASET", "fair.csv")]
    }  # fmt: skip
    is_file = value in FILES or value.startswith(("missing", "model_", "folder", "empty."))
    spoiled = str(folder / value) if value and is_file else value
    argv = [named.get(a, a.format(**named)) for a in base]
    if option.startswith("@"):
        place = named[option]
        argv = [spoiled if a == place else a for a in argv] if place in argv else argv
    elif option in argv:
        argv[argv.index(option) + 1] = spoiled
    else:
        argv += [option, spoiled]
    if command not in _NO_OUT:
        argv += ["--out", str(out), "--quiet"]
    if command.startswith(("release", "train")):
        argv += ["--ledger", named["ledger"], "--seed", "1"]
    return argv


class HangError(Exception):
    """The case ran past :data:`HANG_SECONDS`."""


class ServeReachedError(Exception):
    """``obfuscate serve`` reached the point where it listens."""


def _alarm(signum: int, frame: object) -> None:
    raise HangError


@pytest.fixture(scope="module")
def model_folder(inputs: Path) -> Path:
    """A small DP classifier of the fair data, for ``audit``."""
    folder = inputs
    code = main(
        ["train", str(folder / "fair.csv"), "--target", "religious", "--epsilon", "2",
         "--epochs", "1", "--batch-size", "100", "--schema", str(folder / "schema.yaml"),
         "--out", str(folder / "model"), "--ledger", str(folder / "model-ledger.sqlite"), "-q"]
    )  # fmt: skip
    assert code == 0
    return folder / "model"


def _spends(ledger: Path) -> int:
    return sum(s.releases for s in Ledger(ledger).datasets()) if ledger.exists() else 0


@pytest.mark.parametrize(("command", "option", "value"), CASES, ids=["|".join(c) for c in CASES])
def test_a_hostile_case_ends_in_one_clear_answer(
    command: str,
    option: str,
    value: str,
    inputs: Path,
    model_folder: Path,
    tmp_path: Path,
    _isolated_ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from safeshare.obfuscate import server

    def served(*args: object, **kwargs: object) -> None:
        raise ServeReachedError

    monkeypatch.setattr(server, "serve", served)
    monkeypatch.chdir(inputs)
    monkeypatch.syspath_prepend(str(inputs))
    monkeypatch.delitem(sys.modules, "blackbox", raising=False)  # (the other file's)
    out, ledger = tmp_path / "out", tmp_path / "ledger.sqlite"
    if command.startswith("ledger"):
        assert main(["ledger", "set-total", str(inputs / "fair.csv"), "--epsilon", "9",
                     "--ledger", str(ledger)]) == 0  # fmt: skip
    argv = _argv(command, option, value, inputs, out)
    before = _fingerprints(inputs)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_SECONDS)
    try:
        code = main(argv)
    except ServeReachedError:
        code = 0
    except HangError:
        pytest.fail(f"{argv} ran past {HANG_SECONDS} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert "Traceback" not in text, text
    assert CANARY not in text and "555 0199" not in text, text
    assert _fingerprints(inputs) == before  # no input changed, none removed
    if code == 0:
        return
    assert code == 2, (code, text)
    errors = [line for line in printed.err.splitlines() if line.startswith("error:")]
    usage = "Usage:" in printed.err  # the command-line parser's own refusal
    assert len(errors) == 1 or (usage and not errors), printed.err
    assert not out.exists()
    if not command.startswith("ledger") and DP_FIGURE not in printed.err:
        assert _spends(ledger) == 0 and _spends(_isolated_ledger) == 0
