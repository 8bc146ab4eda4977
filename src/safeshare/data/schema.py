"""The YAML schema: public facts about a table, declared by its owner.

A schema names each column's kind, role and public domain (categories, numeric
bounds and bins).  A column whose domain the schema declares fully costs no
privacy budget; a column it leaves open (no categories, no bounds) is completed
from the data, with a DP mechanism by default.

.. code-block:: yaml

    missing_values: ["", "?", "NA"]      # optional; these spellings mean missing
    header: true                         # optional; false: the CSV has no header row (default: detected)
    columns:
      patient_id: {role: identifier}     # dropped from any release
      age: {kind: numeric, min: 0, max: 100, bins: 20, integer: true, role: quasi_identifier}
      sex: {kind: categorical, categories: [F, M], role: quasi_identifier}
      admitted: {kind: datetime, min: 2020-01-01, max: 2024-12-31, bins: 24}
      diagnosis: {kind: categorical, role: sensitive}   # categories found with DP
      notes: {kind: text}                               # free text: not modelled

>>> schema = Schema.from_dict({"columns": {"sex": {"kind": "categorical", "categories": ["F", "M"]}}})
>>> schema.column("sex").size
4
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from safeshare.data.codec import integer_edges, singleton_edges
from safeshare.data.domain import Column, Domain, Kind, Role, day_number
from safeshare.data.readers import MISSING_TOKENS, Layout
from safeshare.errors import SchemaError

DEFAULT_BINS = 16
MAX_SINGLETON_INTEGERS = 32


MAX_CODES = 100_000
"""The most bins or categories a schema gives one column (each marginal holds every code)."""


class ColumnSpec(BaseModel):
    """One column of a schema file; fields left out are completed from the data."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind | None = None
    role: Role = Role.OTHER
    categories: list[str] | None = None
    min: float | date | None = None
    max: float | date | None = None
    bins: int | None = None
    edges: list[float | date] | None = None
    integer: bool | None = None
    missing: bool = True
    other: bool = True
    format: str | None = None

    @field_validator("categories", mode="before")
    @classmethod
    def _categories_as_text(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [str(v) for v in value]
        return value

    @field_validator("bins")
    @classmethod
    def _positive_bins(cls, value: int | None) -> int | None:
        if value is not None and not 1 <= value <= MAX_CODES:
            raise ValueError(f"bins must lie in [1, {MAX_CODES}], got {value}")
        return value

    @field_validator("edges", "categories")
    @classmethod
    def _not_too_many(cls, value: list[Any] | None) -> list[Any] | None:
        if value is not None and len(value) > MAX_CODES + 1:
            raise ValueError(f"at most {MAX_CODES} codes a column, got {len(value)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ColumnSpec:
        if self.min is not None and self.max is not None and _number(self.min) > _number(self.max):
            raise ValueError(f"min {self.min} is above max {self.max}; swap them")
        numeric_facts = any(v is not None for v in (self.min, self.max, self.edges, self.bins))
        if self.kind in (Kind.CATEGORICAL, Kind.ORDINAL, Kind.TEXT) and numeric_facts:
            raise ValueError(f"a {self.kind} column takes no min/max/bins/edges")
        if self.kind in (Kind.NUMERIC, Kind.DATETIME) and self.categories is not None:
            raise ValueError(f"a {self.kind} column takes no categories; use min/max/bins or edges")
        if self.format is not None and (self.kind is not Kind.DATETIME or "%" not in self.format):
            raise ValueError(
                f"format {self.format!r}: a datetime column's layout in strftime codes, "
                "e.g. format: '%m/%d/%Y'"
            )
        return self

    @property
    def lower(self) -> float | None:
        """The declared minimum as a number (a day number for dates), if any."""
        return None if self.min is None else _number(self.min)

    @property
    def upper(self) -> float | None:
        return None if self.max is None else _number(self.max)

    @property
    def modelled(self) -> bool:
        return self.role is not Role.IDENTIFIER and self.kind is not Kind.TEXT

    @property
    def complete(self) -> bool:
        """Whether the spec alone (public knowledge) fixes the column's codes."""
        if not self.modelled:
            return True
        if self.kind in (Kind.CATEGORICAL, Kind.ORDINAL):
            return self.categories is not None
        if self.kind in (Kind.NUMERIC, Kind.DATETIME):
            return self.edges is not None or (self.min is not None and self.max is not None)
        return False

    def to_column(self, name: str) -> Column:
        """The Column this spec declares; raises if the spec is not complete."""
        if not self.modelled:
            return Column(name, self.kind or Kind.TEXT, role=self.role)
        if self.kind is None or not self.complete:
            raise SchemaError(f"column {name!r}: the schema does not fix its domain")
        if self.kind in (Kind.CATEGORICAL, Kind.ORDINAL):
            return Column(
                name,
                self.kind,
                role=self.role,
                categories=tuple(self.categories or ()),
                missing=self.missing,
                other=self.other,
            )
        return Column(
            name,
            self.kind,
            role=self.role,
            edges=self._edges(),
            integer=bool(self.integer) or self.kind is Kind.DATETIME,
            missing=self.missing,
            date_format=self.format or "",
        )

    def _edges(self) -> tuple[float, ...]:
        if self.edges is not None:
            return tuple(_number(e) for e in self.edges)
        lo, hi = _number(self.min), _number(self.max)  # type: ignore[arg-type]
        integer = bool(self.integer) or self.kind is Kind.DATETIME
        if integer:
            span = int(np.floor(hi) - np.ceil(lo)) + 1
            if self.bins is None and span <= MAX_SINGLETON_INTEGERS:
                return singleton_edges(int(np.ceil(lo)), int(np.floor(hi)))
            return integer_edges(lo, hi, self.bins or DEFAULT_BINS)
        if hi == lo:
            hi = lo + 1.0
        return tuple(float(e) for e in np.linspace(lo, hi, (self.bins or DEFAULT_BINS) + 1))


def _number(value: float | date) -> float:
    return day_number(value) if isinstance(value, date) else float(value)


class _SchemaFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    columns: dict[str, ColumnSpec]
    missing_values: list[str] | None = None
    header: bool | None = None
    constraints: list[dict[str, Any]] | None = None

    @field_validator("columns", mode="before")
    @classmethod
    def _none_is_empty_spec(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): ({} if v is None else v) for k, v in value.items()}
        return value


MAX_YAML_BYTES = 16 << 20
MAX_YAML_DEPTH = 64


def read_yaml(path: str | Path, what: str) -> Any:
    """The safe-loaded content of a YAML file, every failure one :class:`SchemaError` line:
    a missing path or a folder, binary or non-UTF-8 bytes, invalid YAML (with its line), a
    value YAML cannot read (a date 2020-13-45), nesting deeper than 64 or a file over 16 MiB.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "bad.yaml"
    >>> _ = path.write_text("when: 2020-13-45")
    >>> read_yaml(path, "schema file")
    Traceback (most recent call last):
    ...
    safeshare.errors.SchemaError: schema file '...bad.yaml' is not valid YAML: month must be in 1..12
    """
    path = Path(path)
    if not path.is_file():
        state = "is a folder" if path.is_dir() else "does not exist"
        raise SchemaError(f"{what} {str(path)!r} {state}; give the path of a YAML file")
    if path.stat().st_size > MAX_YAML_BYTES:
        raise SchemaError(f"{what} {str(path)!r} is over 16 MiB; a schema or config is far smaller")
    try:
        text = path.read_text(encoding="utf-8")
        if "\x00" in text:
            raise UnicodeDecodeError("utf-8", b"", 0, 1, "binary data")
        data = yaml.safe_load(text)
    except UnicodeDecodeError:
        raise SchemaError(f"{what} {str(path)!r} is not UTF-8 text; save it as YAML") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise SchemaError(f"{what} {str(path)!r} is not valid YAML{where}") from None
    except RecursionError:
        raise SchemaError(f"{what} {str(path)!r} is nested too deeply") from None
    except ValueError as err:  # a value the loader cannot build, e.g. a date 2020-13-45
        raise SchemaError(f"{what} {str(path)!r} is not valid YAML: {err}") from None
    if _depth(data) > MAX_YAML_DEPTH:
        raise SchemaError(f"{what} {str(path)!r} is nested more than {MAX_YAML_DEPTH} deep")
    return data


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_YAML_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


class Schema:
    """Public facts about a table's columns, read from YAML or a dict."""

    def __init__(
        self,
        specs: dict[str, ColumnSpec],
        missing_values: tuple[str, ...] = MISSING_TOKENS,
        source: str = "schema",
        constraints: tuple[dict[str, Any], ...] = (),
        header: bool | None = None,
    ) -> None:
        self._specs = dict(specs)
        self.missing_values = missing_values
        self.source = source
        self.constraints = constraints
        """Public structural constraints (see :mod:`safeshare.synth.constraints`)."""
        self.header = header
        """Whether a CSV's first row is a header: True, False, or None (detected)."""

    @classmethod
    def given(cls, schema: Schema | str | Path | None) -> Schema | None:
        """``schema`` as a Schema: loaded when it is a path, as it is otherwise (or None)."""
        return cls.load(schema) if isinstance(schema, str | Path) else schema

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        return cls.from_dict(read_yaml(path, "schema file"), source=str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "schema") -> Schema:
        if not isinstance(data, dict) or "columns" not in data:
            raise SchemaError(f"{source}: a schema needs a top-level 'columns:' mapping")
        try:
            parsed = _SchemaFile.model_validate(data)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise SchemaError(f"{source}: {where}: {first['msg']}") from None
        missing = (
            tuple(parsed.missing_values) if parsed.missing_values is not None else MISSING_TOKENS
        )
        constraints = tuple(parsed.constraints or ())
        return cls(parsed.columns, missing, source, constraints, parsed.header)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    @staticmethod
    def layout_of(schema: Schema | None, header: bool | None = None) -> Layout:
        """How a file this schema describes is read: whether a header leads it (``header``, from
        ``--header``/``--no-header``, when set; else the schema's ``header:``; else detected),
        the names its columns take without one and its missing spellings.

        >>> Schema.layout_of(Schema.from_dict({"header": False, "columns": {"a": {}}})).header
        False
        >>> Schema.layout_of(None, True)
        Layout(header=True, names=None, missing_values=('', '?', 'NA', 'N/A', 'NaN', 'nan', 'null', 'NULL', 'None'))
        """
        if schema is None:
            return Layout(header=header)
        if header is None:
            header = schema.header
        return Layout(header, schema.names, schema.missing_values)

    def spec(self, name: str) -> ColumnSpec | None:
        return self._specs.get(name)

    def column(self, name: str) -> Column:
        spec = self._specs.get(name)
        if spec is None:
            raise SchemaError(f"column {name!r} is not in {self.source}")
        return spec.to_column(name)

    def is_complete(self) -> bool:
        """Whether every declared column's domain is fixed by the schema alone."""
        return all(s.complete for s in self._specs.values())

    def domain(self) -> Domain:
        """The Domain of the modelled columns; raises if one is left open."""
        open_columns = [n for n, s in self._specs.items() if not s.complete]
        if open_columns:
            raise SchemaError(
                f"{self.source}: columns {open_columns} have no public domain (categories or "
                "bounds); declare them, or let a release discover them with DP"
            )
        return Domain(tuple(self.column(n) for n in self._specs if self._specs[n].modelled))
