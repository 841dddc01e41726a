"""Data sets of the machine-learning problems: read (``files``) or drawn (``synthetic``),
then split across the nodes (``splits``). Below fastgt.problems; numpy, scipy and pandas
only (scikit-learn for LIBSVM files, the optional extra ``fastgt[data]``)."""

from .files import file_stamp, read_file
from .splits import SPLITS, NodeSplit, split_rows
from .synthetic import synthetic

__all__ = ["SPLITS", "NodeSplit", "file_stamp", "read_file", "split_rows", "synthetic"]
