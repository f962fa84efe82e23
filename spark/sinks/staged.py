"""A log row's values staged for a SQL database's bulk load, shared by the PostgreSQL and MySQL sinks: the
Spark expressions that assemble its JSON objects on the executors, whether a row's texts are plain JSON, and
the CSV both databases load (PostgreSQL by COPY, MySQL by LOAD DATA)."""
from __future__ import annotations

import io
from collections.abc import Callable

import pyarrow as pa
import pyarrow.csv as pacsv
from pyspark.sql import Column
from pyspark.sql import functions as F

# Every valid value quoted (so '' is an empty string), nulls as nothing; quotes doubled; backslashes and
# newlines need no escape.
_CSV = pacsv.WriteOptions(include_header=False, quoting_style="all_valid")


def csv_chunk(batch: pa.RecordBatch) -> bytes:
    """Rows as CSV (`_CSV`)."""
    out = io.BytesIO()
    pacsv.write_csv(batch, out, _CSV)
    return out.getvalue()


def column(name: str) -> Callable[[], Column]:
    """Column `name` as it is."""
    return lambda: F.col(name)


def micros(name: str) -> Callable[[], Column]:
    """Timestamp column `name` as µs since the epoch (exact, and free of any zone)."""
    return lambda: F.unix_micros(F.col(name))


def _quoted_text(text: Column) -> Column:
    """A string, number or boolean as its JSON text, null as null (Spark's JSON writer escapes a string)."""
    array = F.to_json(F.array(text))  # ["…"]
    return array.substr(F.lit(2), F.length(array) - 2)


def _json_object(texts: Column) -> Column:
    """A map of JSON texts as the text of the JSON object of their values (`{}` for none)."""
    members = F.transform(F.map_entries(texts), lambda e: F.concat(
        _quoted_text(e["key"]), F.lit(":"), F.coalesce(e["value"], F.lit("null"))))
    return F.coalesce(F.concat(F.lit("{"), F.array_join(members, ","), F.lit("}")), F.lit("{}"))


def object_of_texts(name: str) -> Callable[[], Column]:
    """Column `name`, a map of JSON texts, as the text of the JSON object of their values (`{}` for none)."""
    return lambda: _json_object(F.col(name))


def plain_rows() -> Column:
    """Whether a log row's JSON texts are all plain: none holds NaN, Infinity or \\u0000, which PostgreSQL's
    jsonb refuses (and the first two MySQL's JSON). A part of such rows goes in with its objects assembled
    on the executors (`object_of_texts`); any other part value by value. Text that is not JSON at all is
    found by the database, and the part goes in the other way."""
    texts = F.concat_ws("\n", F.col("key"), F.array_join(F.map_values(F.col("columns")), "\n"),
                        F.array_join(F.map_values(F.col("deleted_elements")), "\n"))
    return ~texts.rlike(r"NaN|Infinity|\\u0000")
