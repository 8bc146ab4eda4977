"""The anonymization config: a YAML file (or dict) validated with pydantic.

.. code-block:: yaml

    quasi_identifiers:
      age: {hierarchy: adult_hierarchy_age.csv}       # ARX CSV, relative to this file
      zip: {hierarchy: mask}                           # 13053 -> 1305* -> 130** -> ... -> *
      income: {hierarchy: {intervals: [1000, 5000, 10000]}}
      visits: {hierarchy: {cuts: [[1, 3, 10], [3]]}}
      birth: {hierarchy: dates}                        # day -> month -> year -> *
      visit: {hierarchy: {dates: [month, quarter, year]}}  # fine to coarse, of: day, week
                                                       # (ISO; last), month, quarter, year, decade
      marital: {hierarchy: {groups: [{married: [Married-civ-spouse, Married-AF-spouse]}]}}
      city: {hierarchy: auto, max_level: 2, weight: 2}  # a default hierarchy; cap the level;
                                                       # its loss counts twice in quality
    sensitive:
      disease: {hierarchy: diseases.csv}               # hierarchical t-closeness needs one
    transforms:                                        # columns that are not generalized
      name: drop
      clinic_id: keep                                  # in clear, on purpose (see below)
      email: {pseudonymize: {key_env: SAFESHARE_KEY}}
      phone: {mask: {keep: 2}}
      visit_date: {date_shift: {subject: patient_id, key_file: key.txt, max_days: 30}}
      salary: {top_code: 200000, bottom_code: 0}
      bmi: {microaggregate: mean}                      # its class's mean (median, mode)
    privacy:
      k: 5
      l_diversity: [{attribute: disease, l: 2, variant: distinct}]
      t_closeness: [{attribute: disease, t: 0.3, distance: hierarchical}]
      k_map: {k: 5, population: population.csv}
      delta_presence: {delta_min: 0.0, delta_max: 0.5, population: population.csv}
      beta_likeness: [{attribute: disease, beta: 1.0, variant: enhanced}]  # or basic
      delta_disclosure: [{attribute: disease, delta: 1.5}]
      average_risk: 0.05
      max_risk: 0.2
      sample_uniqueness: 0.01                            # share of records alone in a class
      population_uniqueness: {threshold: 0.01, population_size: 300000}  # estimated
    suppression_limit: 0.01     # share of records that may be suppressed
    quality: precision          # precision | loss | ncp | entropy | discernibility | aecs |
                                # classification (with target: a column under sensitive)
    search: optimal             # optimal (full-domain, exact) | heuristic (full-domain, any
                                # lattice size, within time_limit; reports its gap to a
                                # proven lower bound) | genetic (the same, exploring with a
                                # genetic algorithm) | local (Mondrian on hierarchies)
    time_limit: 10              # seconds the heuristic search may take
    suppressed_records: remove  # remove | mask (every quasi-identifier becomes *)
    recode_suppressed: false    # true: partition the suppressed records locally and release
                                # those parts that satisfy the models (ARX-style)
    other_columns: keep         # keep | drop: the columns named nowhere above; kept, those
                                # named like direct identifiers (id, name, email, ...) are
                                # still dropped unless transforms says keep

>>> config = AnonymizeConfig.from_dict({"quasi_identifiers": {"age": {"hierarchy": "auto"}},
...                                     "privacy": {"k": 3}})
>>> config.privacy.k, config.quality, config.suppression_limit
(3, 'precision', 0.0)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from safeshare.anonymize.hierarchy import DEFAULT_DATE_LEVELS, date_levels
from safeshare.anonymize.models import (
    AverageRisk,
    BetaLikeness,
    DeltaDisclosure,
    DeltaPresence,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    MaxRisk,
    PopulationUniqueness,
    PrivacyModel,
    RecursiveCLDiversity,
    SampleUniqueness,
    TCloseness,
)
from safeshare.data.schema import read_yaml
from safeshare.errors import SchemaError

HIERARCHY_KINDS = ("csv", "intervals", "cuts", "dates", "mask", "groups", "auto", "rows")

_T = TypeVar("_T")


def _required(value: _T | None, what: str) -> _T:
    """``value``, or a :class:`SchemaError` naming the setting that is missing."""
    if value is None:
        raise SchemaError(f"the config lacks {what}; give it")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HierarchySpec(_Strict):
    """One way to get a hierarchy: a file, a builder, or inline rows."""

    csv: str | None = None
    intervals: list[float] | None = None
    origin: float = 0.0
    cuts: list[list[float]] | None = None
    dates: bool | list[str] | None = None
    mask: bool | None = None
    groups: list[dict[str, list[str]]] | None = None
    auto: bool | None = None
    rows: list[list[str]] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> HierarchySpec:
        given = [k for k in HIERARCHY_KINDS if getattr(self, k) not in (None, False)]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of {list(HIERARCHY_KINDS)} for a hierarchy, not {given or 'none'}"
            )
        return self

    @field_validator("dates", mode="before")
    @classmethod
    def _date_levels(cls, value: Any) -> Any:
        if isinstance(value, str):  # {dates: quarter}: one level
            value = [value]
        if isinstance(value, list):
            return list(date_levels(value))
        return value

    @property
    def kind(self) -> str:
        return next(k for k in HIERARCHY_KINDS if getattr(self, k) not in (None, False))

    @property
    def date_levels(self) -> tuple[str, ...]:
        """The levels of a ``dates`` hierarchy, finer to coarser (default month, year)."""
        return tuple(self.dates) if isinstance(self.dates, list) else DEFAULT_DATE_LEVELS


def _hierarchy_shorthand(value: Any) -> Any:
    if isinstance(value, str):
        if value in ("auto", "dates", "mask"):
            return {value: True}
        return {"csv": value}
    if isinstance(value, list):
        return {"rows": value}
    return value


class QuasiIdentifierSpec(_Strict):
    """A quasi-identifier: its hierarchy and, optionally, the levels the search may use."""

    hierarchy: HierarchySpec | None = None
    min_level: int = Field(0, ge=0)
    max_level: int | None = Field(None, ge=0)
    weight: float = Field(1.0, gt=0, allow_inf_nan=False)  # its share in the quality models

    @field_validator("hierarchy", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _hierarchy_shorthand(value)

    @model_validator(mode="after")
    def _levels(self) -> QuasiIdentifierSpec:
        if self.max_level is not None and self.max_level < self.min_level:
            raise ValueError(f"max_level {self.max_level} is below min_level {self.min_level}")
        return self


class SensitiveSpec(_Strict):
    """A sensitive attribute: kept as is; its hierarchy or order serves t-closeness."""

    hierarchy: HierarchySpec | None = None
    order: list[str] | None = None

    @field_validator("hierarchy", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _hierarchy_shorthand(value)


class PseudonymizeSpec(_Strict):
    key_file: str | None = None
    key_env: str | None = None
    length: int = Field(16, ge=8, le=64)
    prefix: str = ""

    @model_validator(mode="after")
    def _one_key(self) -> PseudonymizeSpec:
        if (self.key_file is None) == (self.key_env is None):
            raise ValueError("give exactly one of key_file or key_env (never a bare hash)")
        return self


class MaskSpec(_Strict):
    keep: int = Field(0, ge=0)
    keep_end: int = Field(0, ge=0)
    char: str = "*"


class DateShiftSpec(_Strict):
    subject: str
    key_file: str | None = None
    key_env: str | None = None
    max_days: int = Field(30, ge=1)

    @model_validator(mode="after")
    def _one_key(self) -> DateShiftSpec:
        if (self.key_file is None) == (self.key_env is None):
            raise ValueError("give exactly one of key_file or key_env")
        return self


_TRANSFORM_KINDS = ("drop", "keep", "pseudonymize", "mask", "date_shift", "microaggregate")


class TransformSpec(_Strict):
    """What to do with a column that is not generalized."""

    drop: bool = False
    keep: bool = False  # released as it is, on purpose (a column named like an identifier)
    pseudonymize: PseudonymizeSpec | None = None
    mask: MaskSpec | None = None
    date_shift: DateShiftSpec | None = None
    top_code: float | None = None
    bottom_code: float | None = None
    microaggregate: Literal["mean", "median", "mode"] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> TransformSpec:
        kinds = [k for k in _TRANSFORM_KINDS if getattr(self, k) not in (None, False)]
        coding = self.top_code is not None or self.bottom_code is not None
        if len(kinds) + coding != 1:
            raise ValueError(
                f"give exactly one of {', '.join(_TRANSFORM_KINDS)} or top_code/bottom_code"
            )
        return self

    @property
    def kind(self) -> str:
        for k in _TRANSFORM_KINDS:
            if getattr(self, k) not in (None, False):
                return f"microaggregate ({self.microaggregate})" if k == "microaggregate" else k
        return "top/bottom coding"


class LDiversitySpec(_Strict):
    attribute: str
    l: float = Field(..., ge=1)  # noqa: E741
    variant: Literal["distinct", "entropy", "recursive"] = "distinct"
    c: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _c_for_recursive(self) -> LDiversitySpec:
        if self.variant == "recursive" and self.c is None:
            raise ValueError("recursive (c,l)-diversity needs c")
        if self.variant != "entropy" and not float(self.l).is_integer():
            raise ValueError(f"{self.variant} l-diversity needs a whole number l")
        return self


class TClosenessSpec(_Strict):
    attribute: str
    t: float = Field(..., ge=0, le=1)
    distance: Literal["equal", "ordered", "hierarchical"] = "equal"


class BetaLikenessSpec(_Strict):
    attribute: str
    beta: float = Field(..., gt=0)
    variant: Literal["basic", "enhanced"] = "basic"


class DeltaDisclosureSpec(_Strict):
    attribute: str
    delta: float = Field(..., gt=0)


class PopulationUniquenessSpec(_Strict):
    threshold: float = Field(..., ge=0, le=1)
    population_size: int = Field(..., ge=1)


class KMapSpec(_Strict):
    k: int = Field(..., ge=1)
    population: str


class DeltaPresenceSpec(_Strict):
    delta_min: float = Field(0.0, ge=0, le=1)
    delta_max: float = Field(..., gt=0, le=1)
    population: str

    @model_validator(mode="after")
    def _ordered(self) -> DeltaPresenceSpec:
        if self.delta_min > self.delta_max:
            raise ValueError(
                f"delta_min ({self.delta_min:g}) is above delta_max ({self.delta_max:g})"
            )
        return self


class PrivacySpec(_Strict):
    """The privacy models; every one given must hold."""

    k: int | None = Field(None, ge=1)
    l_diversity: list[LDiversitySpec] = []
    t_closeness: list[TClosenessSpec] = []
    k_map: KMapSpec | None = None
    delta_presence: DeltaPresenceSpec | None = None
    beta_likeness: list[BetaLikenessSpec] = []
    delta_disclosure: list[DeltaDisclosureSpec] = []
    average_risk: float | None = Field(None, gt=0, le=1)
    max_risk: float | None = Field(None, gt=0, le=1)
    sample_uniqueness: float | None = Field(None, ge=0, le=1)
    population_uniqueness: PopulationUniquenessSpec | None = None

    @field_validator(
        "l_diversity", "t_closeness", "beta_likeness", "delta_disclosure", mode="before"
    )
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _one_population(self) -> PrivacySpec:
        files = {spec.population for spec in (self.k_map, self.delta_presence) if spec}
        if len(files) > 1:
            raise ValueError(
                f"k_map and delta_presence name different population tables ({sorted(files)}); "
                "name the same one"
            )
        return self

    @property
    def population(self) -> str | None:
        """The population table's file that k-map and delta-presence read, if either is set."""
        spec = self.k_map or self.delta_presence
        return spec.population if spec is not None else None

    def models(self) -> list[PrivacyModel]:
        """The model objects (k-map is added by the anonymizer, which reads the population)."""
        out: list[PrivacyModel] = []
        if self.k is not None:
            out.append(KAnonymity(self.k))
        if self.delta_presence is not None:
            presence = self.delta_presence
            out.append(DeltaPresence(presence.delta_min, presence.delta_max))
        for spec in self.l_diversity:
            if spec.variant == "distinct":
                out.append(DistinctLDiversity(spec.attribute, int(spec.l)))
            elif spec.variant == "entropy":
                out.append(EntropyLDiversity(spec.attribute, spec.l))
            else:
                c = _required(spec.c, f"c of the recursive (c,l)-diversity on {spec.attribute!r}")
                out.append(RecursiveCLDiversity(spec.attribute, c, int(spec.l)))
        for t_spec in self.t_closeness:
            out.append(TCloseness(t_spec.attribute, t_spec.t, t_spec.distance))
        for b_spec in self.beta_likeness:
            out.append(BetaLikeness(b_spec.attribute, b_spec.beta, b_spec.variant == "enhanced"))
        for d_spec in self.delta_disclosure:
            out.append(DeltaDisclosure(d_spec.attribute, d_spec.delta))
        if self.average_risk is not None:
            out.append(AverageRisk(self.average_risk))
        if self.max_risk is not None:
            out.append(MaxRisk(self.max_risk))
        if self.sample_uniqueness is not None:
            out.append(SampleUniqueness(self.sample_uniqueness))
        if self.population_uniqueness is not None:
            unique = self.population_uniqueness
            out.append(PopulationUniqueness(unique.threshold, unique.population_size))
        return out


class AnonymizeConfig(_Strict):
    """Everything an anonymization needs besides the data."""

    quasi_identifiers: dict[str, QuasiIdentifierSpec]
    sensitive: dict[str, SensitiveSpec] = {}
    transforms: dict[str, TransformSpec] = {}
    privacy: PrivacySpec
    suppression_limit: float = Field(0.0, ge=0, le=1)
    quality: Literal[
        "precision", "loss", "ncp", "entropy", "discernibility", "aecs", "classification"
    ] = "precision"
    target: str | None = None
    search: Literal["optimal", "heuristic", "genetic", "local"] = "optimal"
    time_limit: float = Field(10.0, gt=0)
    suppressed_records: Literal["remove", "mask"] = "remove"
    recode_suppressed: bool = False
    other_columns: Literal["keep", "drop"] = "keep"
    base_dir: str | None = None

    @field_validator("quasi_identifiers", mode="before")
    @classmethod
    def _qi_shorthand(cls, value: Any) -> Any:
        if isinstance(value, list):
            return {str(name): {} for name in value}
        if isinstance(value, dict):
            return {k: ({} if v is None else v) for k, v in value.items()}
        return value

    @field_validator("sensitive", mode="before")
    @classmethod
    def _sensitive_shorthand(cls, value: Any) -> Any:
        if isinstance(value, list):
            return {str(name): {} for name in value}
        if isinstance(value, dict):
            return {k: ({} if v is None else v) for k, v in value.items()}
        return value

    @field_validator("transforms", mode="before")
    @classmethod
    def _transform_shorthand(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ({v: True} if v in ("drop", "keep") else v) for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _consistent(self) -> AnonymizeConfig:
        if not self.quasi_identifiers:
            raise ValueError("name at least one quasi-identifier")
        roles: dict[str, str] = {}
        for role, names in (
            ("quasi-identifier", self.quasi_identifiers),
            ("sensitive", self.sensitive),
            ("transform", self.transforms),
        ):
            for name in names:
                if name in roles:
                    raise ValueError(f"column {name!r} is both {roles[name]} and {role}; pick one")
                roles[name] = role
        privacy = self.privacy
        used = [
            s.attribute
            for specs in (
                privacy.l_diversity,
                privacy.t_closeness,
                privacy.beta_likeness,
                privacy.delta_disclosure,
            )
            for s in specs
        ]
        for attribute in used:
            if attribute not in self.sensitive:
                raise ValueError(
                    f"{attribute!r} is used by a privacy model but is not listed under sensitive"
                )
        if self.quality == "classification" and self.target is None:
            raise ValueError(
                "quality: classification needs target: COLUMN, the column an analyst predicts "
                "(listed under sensitive)"
            )
        if self.target is not None and self.target not in self.sensitive:
            raise ValueError(
                f"the target {self.target!r} must be listed under sensitive (it is released "
                "as it is and counted per class)"
            )
        if not self.privacy.models() and self.privacy.k_map is None:
            raise ValueError("give at least one privacy model (e.g. privacy: {k: 5})")
        return self

    def resolve(self, path: str) -> Path:
        """A path from the config, relative to the config file's folder."""
        candidate = Path(path).expanduser()
        if candidate.is_absolute() or self.base_dir is None:
            return candidate
        return Path(self.base_dir) / candidate

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], *, base_dir: str | Path | None = None, source: str = "config"
    ) -> AnonymizeConfig:
        if not isinstance(data, dict):
            raise SchemaError(f"{source}: the config must be a mapping of sections")
        if base_dir is not None and "base_dir" not in data:
            data = {**data, "base_dir": str(base_dir)}
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "config"
            message = str(first["msg"]).removeprefix("Value error, ")
            raise SchemaError(f"{source}: {where}: {message}") from None

    @classmethod
    def load(cls, path: str | Path) -> AnonymizeConfig:
        """Read a YAML config; relative paths in it are read from the file's folder."""
        path = Path(path)
        data = read_yaml(path, "config file")
        return cls.from_dict(data or {}, base_dir=path.resolve().parent, source=str(path))
