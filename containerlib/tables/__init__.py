"""Reading input tables (CSV, gzip CSV, Parquet), the one way every part of the project reads them.

Preprocess reads its files through it, and so do, outside any container, the client's schema sampling
(``pipeline/schema.py``) and a local run's pre-scan of its data (``pipeline/local/preflight.py``):

- :mod:`~containerlib.tables.files`: which files under a folder are data (``is_data_file``, ``data_files``), and
  which kind a file is;
- :mod:`~containerlib.tables.header`: a file's column names, checked (``read_header``, ``check_header``);
- :mod:`~containerlib.tables.chunks`: a file's columns ``chunk_rows`` rows at a time (``read_chunks``), from Arrow's
  readers (:mod:`~containerlib.tables.csv_reader`, :mod:`~containerlib.tables.parquet_reader`) with pandas
  taking over wherever Arrow would read a CSV file otherwise;
- :mod:`~containerlib.tables.sample`: the first rows of a file as text (``sample_file``, ``csv_sample``,
  ``parquet_sample``), for deciding a schema;
- :mod:`~containerlib.tables.scan`: the data rows of a file, counted in one cheap pass that checks the encoding, the
  gzip stream and the field counts (``count_rows``).

Errors are :class:`containerlib.errors.TableError`, naming the file as the caller calls it. This package imports
nothing itself: the data-file rule costs no pandas import.
"""
