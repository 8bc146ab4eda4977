"""Generated hostile input: whatever a table file or a partition holds, the reader and the
population estimates end in a result or one SafeshareError, never another exception."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeshare.data.readers import read_frame
from safeshare.errors import SafeshareError
from safeshare.evaluate.uniqueness import pitman
from safeshare.release.output import FORMULA_START, neutralize_formulas

# the characters that broke readers and writers: delimiters, quotes, CR, NUL, markup, formulas
_CELLS = st.text(alphabet=st.sampled_from(list('ab1-9.,;|\t"\r\n\x00$[]/=+@ ')), max_size=8)
_TABLES = st.lists(st.lists(_CELLS, min_size=1, max_size=5), min_size=1, max_size=8)
_DELIMITERS = st.sampled_from([",", ";", "\t", "|"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_TABLES, delimiter=_DELIMITERS)
def test_any_text_file_is_read_or_refused_with_one_error(rows, delimiter):
    text = "\n".join(delimiter.join(row) for row in rows)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "table.csv"
        path.write_text(text, encoding="utf-8", newline="")
        try:
            frame = read_frame(path)
        except SafeshareError as err:
            assert "\n" not in str(err).strip()  # one line
            return
    assert frame.shape[0] >= 1 and frame.shape[1] >= 1
    assert len(set(frame.columns)) == frame.shape[1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("=+-@\t\r1a. ")), max_size=6), min_size=1))
def test_no_written_cell_starts_a_formula(values):
    import pandas as pd

    for column in (pd.Series(values), pd.Series(values, dtype="category")):  # (labels: both)
        cleaned = neutralize_formulas(pd.DataFrame({"v": column}))["v"].tolist()
        for value, raw in zip(cleaned, values, strict=True):
            assert value in (raw, f"'{raw}")
            if value.startswith(FORMULA_START):
                float(value)  # only a plain number may start with + or -


@settings(max_examples=40, deadline=None)  # each example is three Nelder-Mead fits
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=30),
    population=st.integers(min_value=0, max_value=10**9),
)
def test_pitman_gives_a_count_or_abstains(sizes, population):
    value = pitman(np.array(sizes), population)
    assert value is None or (math.isfinite(value) and 0 <= value <= population)
