"""Shared fixtures: the embedded example data, the shared datasets, an isolated ledger."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from safeshare.data import Schema, Table
from safeshare.data.examples import load_example

ROOT = Path(__file__).resolve().parents[1]


def shared_datasets() -> Path | None:
    """``$SAFESHARE_SHARED/datasets`` or ``../shared/datasets`` beside the checkout."""
    base = os.environ.get("SAFESHARE_SHARED")
    candidate = Path(base) / "datasets" if base else ROOT.parent / "shared" / "datasets"
    return candidate if candidate.is_dir() else None


SHARED = shared_datasets()
needs_shared = pytest.mark.skipif(
    SHARED is None,
    reason="needs ../shared/datasets (or $SAFESHARE_SHARED); present in CI, absent on this machine",
)


@pytest.fixture(autouse=True)
def _isolated_ledger(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own ledger: tests never touch the user's real one."""
    path = tmp_path_factory.mktemp("ledger") / "ledger.sqlite"
    monkeypatch.setenv("SAFESHARE_LEDGER", str(path))
    return path


@pytest.fixture(scope="session")
def fair() -> tuple[pd.DataFrame, Schema]:
    return load_example("fair")


@pytest.fixture(scope="session")
def fair_table(fair: tuple[pd.DataFrame, Schema]) -> Table:
    frame, schema = fair
    table, _ = Table.from_frame(frame, schema.domain())
    return table


@pytest.fixture(scope="session")
def fair_csv(tmp_path_factory: pytest.TempPathFactory, fair: tuple[pd.DataFrame, Schema]) -> Path:
    path = tmp_path_factory.mktemp("fair") / "fair.csv"
    fair[0].to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def adult_pgm() -> Table:
    """Private-PGM's integer-coded Adult (48,842 x 14) with its public domain sizes."""
    if SHARED is None:
        pytest.skip("needs ../shared/datasets")
    import json

    from safeshare.data import Domain

    sizes = json.loads((SHARED / "adult-pgm" / "adult-domain.json").read_text())
    frame = pd.read_csv(SHARED / "adult-pgm" / "adult.csv")
    return Table({name: frame[name].to_numpy() for name in sizes}, Domain.from_sizes(sizes))


@pytest.fixture
def one_torch_thread():
    """One torch thread for the test: on two shared cores a second thread only contends."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
