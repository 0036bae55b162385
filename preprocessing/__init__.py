"""The Preprocess processing job: split, shuffle, shard and convert a raw table to RecordIO-protobuf.

Runs as a plain script on each processing instance (numpy, pandas, pyarrow and the standard library only), from
its code bundle's entry ``preprocess.py`` (``preprocessing/preprocess.py`` here), or outside a job as
``python -m preprocessing.preprocess`` (an absent resource config means a single host):

    python preprocess.py --input-dir D --output-dir O --label-column NAME --predictor-type T [options]

Output, under ``--output-dir`` (default ``/opt/ml/processing/output``), in four fixed sub-folders, one
ProcessingOutput each (source ``/opt/ml/processing/output/<sub-folder>``):
- ``train/``, ``validation/``, ``test/``: RecordIO-protobuf shards named ``<split>-<host>-<nnnnn>.pbr`` (unique per
  host), dense Float32 features in ``features["values"]``, the label in ``label["values"]``. Each host writes
  ceil(``--train-shards`` / hosts) train files and one validation and one test file (none for an empty split).
- ``summary/``: ``summary-<host>.json`` from every host and, on a single host, the merged ``summary.json``. With
  several hosts the next step reads the folder with :func:`load_summary`, which applies :func:`merge_summaries`.
- ``rows/``: ``train-<host>.parquet`` and ``test-<host>.parquet``, a bounded sample of each split's raw rows
  (``--raw-rows``, ``raw_rows.py``) for Evaluate's raw-column baseline.

Rules that keep the result independent of how many instances ran and how the input files were divided:
- Split: each row goes to train/validation/test by a seeded 64-bit hash of its converted content (its float32 features
  and label) or, with ``--id-column``, of its id text. No host-dependent state enters the decision.
- Categorical columns (``--categorical-columns``) are feature-hashed: value ``v`` of column ``c`` sets one of
  ``--hash-buckets`` indicator features, bucket ``blake2b-64("c=v") mod buckets``; a stable hash (not Python's salted
  ``hash()``), so every host maps a value identically without seeing a vocabulary. Values are hashed as their text
  (CSV: as written; Parquet: Arrow's cast to string); a missing value sets no indicator.
- Labels: the mapping never depends on the data a host saw. ``--label-values V0,V1[,...]`` maps ``Vi`` to ``i``
  (matched as text, or numerically when both sides are numbers). Without it binary labels must already be 0/1,
  multiclass labels integers 0..K-1, regression labels finite numbers. Anything else is an error naming file and row.
- Missing values (``--missing``): ``error`` (default) fails on the first empty, NaN or non-finite feature or label
  (values beyond float32's range count as non-finite); ``zero`` imputes 0 for numeric features and an all-zero block
  for categorical ones (a missing label is still an error); ``drop`` drops such rows and counts them. NaN or inf never
  reaches a RecordIO file.
- Shuffle: rows are dealt in a seeded random order, round-robin, to the host's shards, kept in memory up to a fixed
  32 MB of frames and spilled to the work folder beyond; each shard is then shuffled (in memory, or from disk a block
  at a time, through random buckets of ``--shuffle-memory-mb`` first when larger), so memory stays bounded by the
  chunk and shuffle buffers, never by the data set; the shards are the same bytes wherever the rows were held.
- Input: every ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq`` file under ``--input-dir`` (recursively; files and
  folders whose names start with ``.`` or ``_`` skipped: ``containerlib.tables.files``), each with a header whose
  names are unique (a repeated name is an error naming it).
- Columns by name, one layout for every host, whatever files it got: the feature order is ``--feature-columns``, else
  the ``feature_columns`` of ``--schema`` (decided once by the client from a sample of the input), else every column
  but the label and id sorted by name. Each file's columns are matched to it by name, in any order; a file lacking a
  column, or (without ``--feature-columns``) holding one the layout does not have, fails naming both.
- ``--schema`` (a JSON file, or a folder holding one) also gives the categorical columns, label values, number of
  classes and id column; an argument that is given wins over it.
- Reading (``containerlib.tables``): CSV is parsed by Arrow's multi-threaded reader, a few MB of whole lines at a
  time, on a background thread while the previous chunk is converted, taking values as pandas' ``read_csv`` would
  (its missing-value strings, booleans, no dates; a column's integers may turn to floats, or its empty values to
  anything, as within a pandas chunk); a file Arrow cannot take that way (a malformed row, text in a number column,
  a date) is read from there on by pandas, so results and errors are always pandas'. Chunks are exactly
  ``--chunk-rows`` rows, so the output does not depend on the reader.
Row numbers in messages count data rows from 1, after the header (blank CSV lines are not rows); files are named by
``--input-source`` (the input's S3 URI) when given, so a user reads s3://bucket/in/d.csv, not the container's path.
Nothing half-written is left behind: files are built in ``O/.preprocess-work-<host>/`` and renamed into place when
complete; on failure everything this host wrote is removed.

Modules, in the order the job uses them: ``command`` (arguments -> ``settings.Settings``, exit status), ``job`` (one
host's run), ``inputs`` (the input files and how messages name them, the decided schema), ``layout`` (which columns
are features, in which order), ``labels``, ``conversion`` (chunks read through ``containerlib.tables`` to float32
rows, feature hashing), ``hashing`` (the split), ``stats``, ``shards`` (dealing, spilling, shuffled RecordIO
files), ``summary`` (built, merged, loaded), ``transaction`` (all of a host's output or none), ``baseline`` (the
data-quality sample), ``raw_rows`` (the raw train and test rows' sample).
"""

from __future__ import annotations

from containerlib.errors import InputError


class PreprocessError(InputError):
    """A problem with the input or the arguments that the user must fix; printed as one line, exit status 1."""
