"""docs/evaluate.md runs as written."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "evaluate.md"


def test_the_evaluate_page_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert blocks
    namespace: dict = {}
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "singling out" in printed and "risk (95% family-wise interval" in printed
