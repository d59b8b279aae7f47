"""The benchmark-neutral core of ``evals``: the contracts a benchmark folder fills in (options,
metrics, the benchmark itself), the registry that finds the folders, and (in submodules imported on
use) the run pipeline, scoring, the judge, serving and data fetching. See ``docs/architecture.md``."""

from .context import ScoreContext
from .data import DataNotFound, RemoteFile, cache_dir, data_dir, data_file
from .metrics import Metric, MetricValue, TaskScore
from .options import Option, OptionError
from .plugin import Benchmark, BenchmarkInfo, EpisodeEnv, PaperNumbers
from .registry import all_benchmarks, get_benchmark, load_benchmark

__all__ = [
    "Benchmark",
    "BenchmarkInfo",
    "DataNotFound",
    "EpisodeEnv",
    "Metric",
    "MetricValue",
    "Option",
    "OptionError",
    "PaperNumbers",
    "RemoteFile",
    "ScoreContext",
    "TaskScore",
    "all_benchmarks",
    "cache_dir",
    "data_dir",
    "data_file",
    "get_benchmark",
    "load_benchmark",
]
