"""Sweeps: grid specs and their cells (grid), running a cell in a worker (cellrun), tasks
bounded by run time (tasks), local and Dask executors (executors), Parquet storage with
claims and resume (storage)."""
