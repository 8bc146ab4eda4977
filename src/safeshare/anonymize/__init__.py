"""anonymize/: hierarchies, privacy models, the optimal lattice search, quality, transforms.

>>> from safeshare.anonymize import Anonymizer, KAnonymity
>>> KAnonymity(5).describe()
'k=5'
"""

from safeshare.anonymize.anonymizer import Anonymizer
from safeshare.anonymize.config import AnonymizeConfig
from safeshare.anonymize.heuristic import heuristic_search
from safeshare.anonymize.hierarchy import (
    Hierarchy,
    HierarchyError,
    automatic,
    cuts,
    dates,
    groupings,
    intervals,
    masking,
)
from safeshare.anonymize.models import (
    AnonymizationError,
    AverageRisk,
    DeltaPresence,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    KMap,
    MaxRisk,
    NoSolutionError,
    RecursiveCLDiversity,
    TCloseness,
)
from safeshare.anonymize.problem import Problem
from safeshare.anonymize.quality import QualityScores
from safeshare.anonymize.result import AnonymizationResult, ClassStatistics, ModelOutcome
from safeshare.anonymize.search import exhaustive_search, optimal_search
from safeshare.anonymize.transforms import SecretKey, pseudonymize

__all__ = [
    "AnonymizationError",
    "AnonymizationResult",
    "AnonymizeConfig",
    "Anonymizer",
    "AverageRisk",
    "ClassStatistics",
    "DeltaPresence",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "Hierarchy",
    "HierarchyError",
    "KAnonymity",
    "KMap",
    "MaxRisk",
    "ModelOutcome",
    "NoSolutionError",
    "Problem",
    "QualityScores",
    "RecursiveCLDiversity",
    "SecretKey",
    "TCloseness",
    "automatic",
    "cuts",
    "dates",
    "exhaustive_search",
    "groupings",
    "heuristic_search",
    "intervals",
    "masking",
    "optimal_search",
    "pseudonymize",
]
