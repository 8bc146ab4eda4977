"""The heuristic search: exact when it proves its result, a true lower bound when it does not."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeshare.anonymize.anonymizer import Anonymizer
from safeshare.anonymize.config import AnonymizeConfig
from safeshare.anonymize.heuristic import heuristic_search
from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.models import KAnonymity, NoSolutionError
from safeshare.anonymize.problem import Problem
from safeshare.anonymize.search import exhaustive_search, optimal_search
from safeshare.errors import SchemaError
from tests.anonymize.test_search import _adult_problem, problems
from tests.conftest import needs_shared


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.booleans())
def test_proven_results_equal_exhaustive_enumeration(case, genetic):
    problem, metric = case
    try:
        expected = exhaustive_search(problem, metric)
    except NoSolutionError:
        with pytest.raises(NoSolutionError):
            heuristic_search(problem, metric, seconds=30.0, genetic=genetic)
        return
    found = heuristic_search(problem, metric, seconds=30.0, genetic=genetic)
    assert found.bound is None and found.gap == 0.0  # small lattices are proven in time
    assert found.score == pytest.approx(expected.score, abs=1e-9)
    assert found.node in {expected.node, *expected.ties}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.sampled_from([1e-4, 3e-3]), st.booleans())
def test_a_cut_short_search_brackets_the_optimum(case, seconds, genetic):
    problem, metric = case
    try:
        expected = exhaustive_search(problem, metric)
        found = heuristic_search(problem, metric, seconds=seconds, genetic=genetic)
    except NoSolutionError:
        return  # (in so little time the search may find none; a proven "none" is tested above)
    assert found.score >= expected.score - 1e-9
    assert found.score - found.gap <= expected.score + 1e-9


def _wide_problem(columns: int, rows: int, k: int, seed: int) -> Problem:
    """``columns`` quasi-identifiers of 16 values under a 5-level binary hierarchy each."""
    rng = np.random.default_rng(seed)
    h = [
        Hierarchy.from_rows(
            f"q{c}",
            [[str(v), str(v // 2), str(v // 4), str(v // 8), "*"] for v in range(16)],
        )
        for c in range(columns)
    ]
    codes = [rng.zipf(1.6, rows).clip(1, 16) - 1 for _ in range(columns)]
    return Problem.build(h, codes, models=[KAnonymity(k)], suppression_limit=0.02)


def test_a_lattice_past_the_exact_search_gets_a_result_and_its_gap():
    problem = _wide_problem(12, 3_000, 5, 0)  # 5 ** 12 = 244 million transformations
    with pytest.raises(Exception, match="more than 20,000,000"):
        optimal_search(problem, "precision")
    found = heuristic_search(problem, "precision", seconds=2.0)
    assert problem.lattice.size == 5**12
    assert 0 < found.score < 1 and found.bound is not None
    assert 0 <= found.bound <= found.score
    top = heuristic_search(problem, "precision", seconds=1e-6)  # only the first descent
    assert found.score <= top.score
    bred = heuristic_search(problem, "precision", seconds=2.0, genetic=True)
    assert bred.score <= top.score and 0 <= bred.score - bred.gap <= bred.score


@needs_shared
@pytest.mark.parametrize("limit", [0.0, 0.01])
def test_adult_heuristic_equals_the_optimum(limit):
    problem = _adult_problem(limit)
    exact = optimal_search(problem, "precision")
    found = heuristic_search(problem, "precision", seconds=20.0)
    assert found.score == pytest.approx(exact.score, abs=1e-9)
    assert found.gap == 0.0


def test_the_anonymizer_writes_the_heuristic_search_and_its_gap_in_the_card():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({f"q{c}": rng.zipf(1.6, 400).clip(1, 16).astype(str) for c in range(5)})
    config = {
        "quasi_identifiers": {c: {"hierarchy": {"intervals": [2, 4, 8]}} for c in frame},
        "privacy": {"k": 4},
        "suppression_limit": 0.02,
        "search": "heuristic",
        "time_limit": 5,
    }
    exact = Anonymizer({**config, "search": "optimal"}).fit(frame)
    for search in ("heuristic", "genetic"):
        result = Anonymizer({**config, "search": search}).fit(frame)
        assert result.search["proven_optimal"] and result.search["gap"] == 0.0
        assert result.search["score"] == pytest.approx(exact.search["score"], abs=1e-9)
        assert result.search["lower_bound"] == pytest.approx(result.search["score"])
        assert "heuristic lattice search within 5 s" in result.search["method"]
    assert "a genetic search" in result.search["method"]
    sizes = result.frame.groupby(list(frame.columns)).size()
    assert sizes.min() >= 4  # recounted on the written table
    with pytest.raises(SchemaError, match="time_limit"):
        AnonymizeConfig.from_dict({**config, "time_limit": 0})
