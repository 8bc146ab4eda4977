"""docs/train.md runs as written."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "train.md"


def test_the_train_page_runs(capsys):
    pytest.importorskip("opacus")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) == 9
    import torch

    namespace: dict = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: extra threads only contend on a shared machine
    try:
        for code in blocks:
            exec(compile(code, str(DOC), "exec"), namespace)
    finally:
        torch.set_num_threads(threads)
    printed = capsys.readouterr().out
    assert "1.4762" in printed and "1.2273" in printed
    assert "loss " in printed and " ± " in printed  # the planner's estimates
    assert "poisson" in printed and "AUC" in printed
    assert "empirical epsilon >= 2.31195" in printed
    assert "the model claims no DP guarantee" in printed
    assert "LiRA (online, 2 shadow models" in printed
    assert "exact extraction: train 100%, held-out 0%" in printed
