"""engine/: counting backends behind one interface (numpy by default; DuckDB and Spark for files)."""

from safeshare.data.table import CodedTable, Table
from safeshare.engine.base import CountingEngine
from safeshare.engine.numpy_engine import NumpyEngine
from safeshare.errors import InputError

__all__ = ["CountingEngine", "NumpyEngine", "default_engine", "engine_for"]


def default_engine() -> CountingEngine:
    """The engine used when none is given."""
    return NumpyEngine()


def engine_for(table: CodedTable) -> CountingEngine:
    """The engine that counts ``table``: numpy for an in-memory Table, else the table's own."""
    if isinstance(table, Table):
        return NumpyEngine()
    engine = getattr(table, "engine", None)
    if isinstance(engine, CountingEngine):
        return engine
    raise InputError(f"no engine counts a {type(table).__name__}; give an engine explicitly")
