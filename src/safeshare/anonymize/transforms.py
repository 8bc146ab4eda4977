"""Identifier transforms: what happens to columns that are not generalized.

* ``drop``: the column leaves the release.
* ``pseudonymize``: HMAC-SHA256 under a secret key, read from a file or an environment
  variable.  A bare hash is never offered: anyone can hash every possible value of a small
  domain (phone numbers, IDs) and reverse it; without the key an HMAC cannot be recomputed.
  The same value gives the same pseudonym under one key, so joins within a release survive.
* ``mask``: keep the first (or last) characters and star the rest.
* ``date_shift``: move every date of one subject by the same number of days, drawn from the
  subject's HMAC in ``[-max_days, max_days]``: intervals within a subject stay exact.
* ``top_code`` / ``bottom_code``: numbers above (below) a threshold become the threshold.
* ``microaggregate``: every value becomes its equivalence class's mean, median or mode, so a
  numeric column keeps its per-class average without being generalized (ARX's
  microaggregation); the classes are those of the released quasi-identifiers.

>>> key = SecretKey(b"0123456789abcdef0123456789abcdef")
>>> import pandas as pd
>>> out = pseudonymize(pd.Series(["alice", "bob", "alice", None]), key)
>>> out[0] == out[2], out[0] != out[1], out[3] is None
(True, True, True)
>>> mask(pd.Series(["0612345678"]), keep=2).tolist()
['06********']
>>> code_extremes(pd.Series(["12", "95", "40"]), top=90, bottom=18).tolist()
['18', '90', '40']
>>> microaggregate(pd.Series(["30", "50", "7", None]), pd.Series([0, 0, 1, 1]), "mean").tolist()
['40', '40', '7', '7']
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from safeshare.data.dates import read_any
from safeshare.errors import InputError, SchemaError

MIN_KEY_BYTES = 16


@dataclass(frozen=True)
class SecretKey:
    """A secret HMAC key (never printed)."""

    value: bytes

    def __post_init__(self) -> None:
        if len(self.value) < MIN_KEY_BYTES:
            raise SchemaError(
                f"the pseudonymization key has {len(self.value)} bytes; give at least "
                f'{MIN_KEY_BYTES} random bytes (e.g. `python -c "import secrets; '
                'print(secrets.token_hex(32))"`)'
            )

    def __repr__(self) -> str:
        return "SecretKey(<hidden>)"

    @classmethod
    def load(cls, *, key_file: str | Path | None = None, key_env: str | None = None) -> SecretKey:
        """The key from a file (its bytes, one trailing newline removed) or an env variable."""
        if key_file is not None:
            path = Path(key_file)
            if not path.is_file():
                raise SchemaError(f"the key file {str(path)!r} does not exist")
            data = path.read_bytes()
            return cls(data[:-1] if data.endswith(b"\n") else data)
        if key_env is not None:
            text = os.environ.get(key_env)
            if not text:
                raise SchemaError(
                    f"the environment variable {key_env!r} that should hold the "
                    "pseudonymization key is not set"
                )
            return cls(text.encode())
        raise SchemaError("pseudonymization needs a secret key: give key_file or key_env")

    def digest(self, message: str) -> bytes:
        return hmac.new(self.value, message.encode("utf-8"), hashlib.sha256).digest()


def pseudonymize(
    values: pd.Series, key: SecretKey, *, length: int = 16, prefix: str = ""
) -> pd.Series:
    """HMAC-SHA256 of each value under ``key``, as ``length`` hex characters (missing stays)."""
    if not 8 <= length <= 64:
        raise SchemaError(f"a pseudonym has 8 to 64 hex characters, not {length}")
    cache: dict[str, str] = {}

    def one(value: object) -> object:
        if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
            return None
        text = str(value)
        if text not in cache:
            cache[text] = prefix + key.digest(text).hex()[:length]
        return cache[text]

    return pd.Series([one(v) for v in values], index=values.index, dtype=object)


def mask(values: pd.Series, *, keep: int = 0, keep_end: int = 0, char: str = "*") -> pd.Series:
    """Keep ``keep`` leading and ``keep_end`` trailing characters; replace the rest by ``char``.

    A value is never shown whole: one no longer than what is kept keeps one character fewer.

    >>> mask(pd.Series(["P0012", "AB", "A", None]), keep=2).tolist()
    ['P0***', 'A*', '*', None]
    """

    def one(value: object) -> object:
        if pd.isna(value):  # type: ignore[call-overload]
            return None
        text = str(value)
        shown = max(len(text) - 1, 0)  # (at least one character masked)
        lead = min(keep, shown)
        tail = min(keep_end, shown - lead)
        middle = len(text) - lead - tail
        return text[:lead] + char * middle + (text[len(text) - tail :] if tail else "")

    return pd.Series([one(v) for v in values], index=values.index, dtype=object)


def date_shift(
    values: pd.Series, subjects: pd.Series, key: SecretKey, *, max_days: int = 30
) -> pd.Series:
    """Every date of a subject moved by the same keyed offset in ``[-max_days, max_days]``.

    ``subjects`` (one per value, none missing) are the subjects as given, not as another
    transform wrote them.  Dates keep their time of day where they have one.
    """
    if max_days < 1:
        raise SchemaError(f"max_days must be at least 1, got {max_days}")
    dates = read_any(values)
    bad = dates.isna() & values.notna()
    if bad.any():
        raise InputError(
            f"column {values.name!r}: {int(bad.sum())} value(s) are not dates; "
            "date shifting needs dates such as 2024-03-31 (or 2024-03-31 10:30)"
        )
    span = 2 * max_days + 1

    def offset(subject: str) -> int:
        number = int.from_bytes(key.digest(f"date-shift\x1f{subject}")[:8], "big")
        return number % span - max_days

    if subjects.isna().any():
        raise ValueError("every date needs a subject; key a record without one by itself")
    offsets = subjects.astype("string").map(offset).astype("int64")
    shifted = dates + pd.to_timedelta(offsets.to_numpy(), unit="D")
    timed = bool((dates.dropna() != dates.dropna().dt.normalize()).any())
    out = shifted.dt.strftime("%Y-%m-%d %H:%M:%S" if timed else "%Y-%m-%d")
    return out.where(dates.notna(), None).astype(object)


def code_extremes(
    values: pd.Series, *, top: float | None = None, bottom: float | None = None
) -> pd.Series:
    """Top and bottom coding: numbers beyond a threshold become the threshold."""
    numbers = pd.to_numeric(values, errors="coerce")
    bad = numbers.isna() & values.notna()
    if bad.any():
        raise InputError(
            f"column {values.name!r}: {int(bad.sum())} value(s) are not numbers; "
            "top/bottom coding needs numbers"
        )
    out = values.astype(object).copy()
    if top is not None:
        out[numbers > top] = _number_text(top)
    if bottom is not None:
        out[numbers < bottom] = _number_text(bottom)
    return out


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


AGGREGATES = ("mean", "median", "mode")


def microaggregate(values: pd.Series, classes: pd.Series, how: str) -> pd.Series:
    """Each value replaced by its class's ``how`` (mean, median: of the numbers; mode: the
    most frequent value, the smallest on ties), over the class's present values."""
    if how not in AGGREGATES:
        raise SchemaError(f"microaggregate takes one of {list(AGGREGATES)}, not {how!r}")
    if how == "mode":
        present = values.astype("string")
        counts = pd.DataFrame({"c": classes.to_numpy(), "v": present.to_numpy()}).dropna()
        ranked = counts.groupby(["c", "v"]).size().reset_index(name="n")
        ranked = ranked.sort_values(["c", "n", "v"], ascending=[True, False, True])
        modes = ranked.drop_duplicates("c").set_index("c")["v"]
        return pd.Series(classes.map(modes).to_numpy(), index=values.index, dtype=object)
    numbers = pd.to_numeric(values, errors="coerce")
    stray = int(
        (numbers.isna() & values.notna() & (values.astype("string").str.strip() != "")).sum()
    )
    if stray:
        raise InputError(
            f"microaggregate: {how} needs numbers, but column {values.name!r} holds {stray} "
            "value(s) that are not; use mode, or clean the column"
        )
    grouped = numbers.groupby(classes.to_numpy())
    per_class = grouped.mean() if how == "mean" else grouped.median()
    aggregated = pd.Series(classes.map(per_class.round(4)).to_numpy(), index=values.index)
    return aggregated.map(lambda v: None if pd.isna(v) else _number_text(v))
