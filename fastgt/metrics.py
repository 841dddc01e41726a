"""The names of the recorded metrics, in the order of every trace and cell row (definitions:
docs/definitions.md; computed by fastgt.kernels.metrics). Light to import: no numba."""

METRICS = ("loss_avg", "loss_nodes", "consensus", "grad_norm2", "tracking")
