"""The RecordIO-protobuf codec (``application/x-recordio-protobuf``), vectorised with numpy.

The format Linear Learner reads: dmlc RecordIO frames (uint32 magic 0xCED7230A, uint32 length with a 3-bit
continuation flag on top, payload, zero padding to 4 bytes) around protobuf ``aialgs.data.Record`` messages.
Writers build every record of a batch at once in one numpy byte array, and readers decode the layout protobuf
produces with array operations, falling back to a per-record wire-format parser (still no protobuf library) for
unusual layouts, so the codec runs in a container with numpy alone (scipy only for sparse matrices).

Choices (documented here because callers depend on them):
- Features and labels are written as Float32 tensors; float64 input is converted, integer or other features are a
  TypeError, labels may be any real numeric dtype (converted to float32). NaN or infinity is a ValueError naming the
  row, because Linear Learner cannot train on it. Records are never split with the continuation flag on writing,
  exactly like SDK v2 (the reader accepts split records).
- Readers return float32 (Float64 and Int32 tensors are converted), a dense ndarray, or a scipy CSR matrix when the
  records are sparse (``keys`` present, or an empty row with a ``shape``); labels are ``label["values"]`` holding
  one value per record, returned as float32, or None when no record has a label. When every record has the same
  layout (what write_dense produces) the dense X is a strided, read-only view of the bytes read, not a copy:
  ``np.array(X)`` gives a contiguous, writable copy.
- Corrupt input raises RecordIOError (a ValueError) naming the file, byte offset, record index and what was
  expected; nothing is ever skipped silently.

Modules: :mod:`~containerlib.recordio.wire` (the format's constants and errors), ``varints``, ``writer``,
``framing`` (frames to records), ``fast_decode`` (array decoding of the usual layouts), ``protobuf`` (the generic
parser), ``reader`` (records to arrays).
"""

from containerlib.recordio.reader import iter_batches, read, read_file
from containerlib.recordio.wire import MAGIC, RecordIOError
from containerlib.recordio.writer import write_dense, write_sparse

__all__ = ["MAGIC", "RecordIOError", "iter_batches", "read", "read_file", "write_dense", "write_sparse"]
