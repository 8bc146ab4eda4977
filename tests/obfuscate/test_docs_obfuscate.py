"""docs/obfuscate.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

DOC = Path(__file__).resolve().parents[2] / "docs" / "obfuscate.md"


def test_the_obfuscate_page_runs(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert blocks
    namespace: dict = {}
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "curve points: 1" in printed
    assert "nearest neighbour: 100.0% of" in printed
    assert "embeddings from the server: (4, 384)" in printed
