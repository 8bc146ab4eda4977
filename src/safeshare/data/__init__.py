"""data/: the Domain, the integer-coded Table, readers, schemas and example data."""

from safeshare.data.codec import EncodeReport, decode_table, encode_frame
from safeshare.data.domain import Column, Domain, Kind, Role
from safeshare.data.readers import fingerprint_file, fingerprint_frame, read_frame
from safeshare.data.schema import ColumnSpec, Schema
from safeshare.data.table import CodedTable, Table

__all__ = [
    "CodedTable",
    "Column",
    "ColumnSpec",
    "Domain",
    "EncodeReport",
    "Kind",
    "Role",
    "Schema",
    "Table",
    "decode_table",
    "encode_frame",
    "fingerprint_file",
    "fingerprint_frame",
    "read_frame",
    "read_table",
]


def read_table(path: str, schema: Schema) -> Table:
    """Read a file and encode it against a schema that fixes every column's domain.

    A schema that leaves a domain open needs DP discovery (which spends budget):
    use :func:`safeshare.release` or :func:`safeshare.dp.discover_domain` then.
    Columns the schema does not mention are ignored.
    """
    domain = schema.domain()
    frame = Schema.layout_of(schema).read(path)
    table, _ = encode_frame(frame, domain)
    return table
