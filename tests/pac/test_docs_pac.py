"""docs/pac.md runs as written: every Python block, in order, in one namespace."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "pac.md"


def test_pac_page_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 5
    namespace: dict = {}
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "67.5%" in printed and "83.4%" in printed and "51.08%, epsilon = 0.0431" in printed
    assert "the PAC bound is" in printed
