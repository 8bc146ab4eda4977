"""The tutorial runs as written: every code block, in order, in a fresh directory."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def blocks(path: Path) -> list[tuple[str, str]]:
    return re.findall(r"```(python|bash)\n(.*?)```", path.read_text(), flags=re.DOTALL)


@pytest.mark.slow  # the whole tutorial, end to end
def test_tutorial_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    namespace: dict = {}
    found = blocks(DOCS / "tutorial.md")
    assert len(found) >= 6
    for language, code in found:
        if language == "python":
            exec(compile(code, "tutorial.md", "exec"), namespace)
        else:
            done = subprocess.run(
                ["bash", "-e", "-c", code],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            assert done.returncode == 0, f"{code}\n{done.stdout}\n{done.stderr}"
    assert (tmp_path / "release" / "report.html").exists()
    assert not (tmp_path / "release-2").exists()  # refused by the ledger


def test_engines_page_runs(tmp_path, monkeypatch):
    pytest.importorskip("duckdb")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    found = [code for language, code in blocks(DOCS / "engines.md") if language == "python"]
    assert len(found) == 2
    for code in found:
        exec(compile(code, "engines.md", "exec"), namespace)
    assert namespace["result"].card["engine"] == {"name": "duckdb", "memory_limit": "1GB"}
    assert namespace["model"].fitted_
