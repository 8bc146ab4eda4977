"""docs/anonymize.md runs as written: every bash and python block, in order, in a fresh folder."""

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import SHARED, needs_shared

DOC = Path(__file__).resolve().parents[2] / "docs" / "anonymize.md"


@needs_shared
def test_anonymize_page_runs(tmp_path, monkeypatch):
    assert SHARED is not None
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAFESHARE_SHARED", str(SHARED.parent))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    blocks = re.findall(r"```(python|bash)\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 3
    namespace: dict = {}
    for language, code in blocks:
        if language == "python":
            exec(compile(code, "anonymize.md", "exec"), namespace)
        else:
            done = subprocess.run(
                ["bash", "-e", "-c", code], env=env, capture_output=True, text=True, check=False
            )
            assert done.returncode == 0, f"{code}\n{done.stdout}\n{done.stderr}"
    assert (tmp_path / "out" / "report.html").exists()
