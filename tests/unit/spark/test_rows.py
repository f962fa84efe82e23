"""The Arrow column of raw stream ids, built from their buffer."""
import numpy as np
import pyarrow as pa

from spark import rows as R
from spark.streams import STREAM_ID_DTYPE, StreamId


def test_stream_ids_keep_every_byte_and_absent_ones_are_null():
    values = [StreamId.create(-(2**63), 0).value, StreamId.create(2**63 - 1, 5, 7).value,
              bytes(16)]  # an id of zeros: no trailing byte may be lost
    ids = np.array(values, dtype=STREAM_ID_DTYPE)
    column = R.stream_id_column(ids)
    assert column.type == pa.binary() and column.null_count == 0
    assert column.to_pylist() == values

    present = np.array([True, False, True])
    with_null = R.stream_id_column(ids, present)
    assert with_null.null_count == 1 and with_null.to_pylist() == [values[0], None, values[2]]
    assert R.stream_id_column(ids[:0]).to_pylist() == []
