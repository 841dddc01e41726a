"""Sweeps: grid specs and their cells (grid), running a cell in a worker (cellrun), tasks
bounded by run time (tasks), the dispatch loop (executors) over local or Dask workers
(backends), what a sweep did (report), signals while it runs (signals), Parquet storage
with claims and resume (storage)."""
