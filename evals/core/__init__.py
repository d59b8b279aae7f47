"""The benchmark-neutral core of ``evals``: the contracts a benchmark folder fills in (options,
metrics, the benchmark itself), the registry that finds the folders, and (in submodules imported on
use) the run pipeline, scoring, the judge, serving and data fetching. See ``docs/architecture.md``."""

from typing import TYPE_CHECKING, Any

from ..lazy import lazy_attribute

if TYPE_CHECKING:
    from .anomalies import Anomaly
    from .context import ScoreContext
    from .data import DataNotFound, RemoteFile, cache_dir, data_dir, data_file
    from .metrics import Metric, MetricValue, TaskScore
    from .options import Option, OptionError
    from .plugin import Benchmark, BenchmarkInfo, EpisodeEnv, PaperNumbers
    from .registry import all_benchmarks, get_benchmark, load_benchmark

# imported on first use (PEP 562), so that `evals --help` does not load the judge's MCP stack
_HOME = {
    "Anomaly": "anomalies", "ScoreContext": "context", "DataNotFound": "data", "RemoteFile": "data", "cache_dir": "data",
    "data_dir": "data", "data_file": "data", "Metric": "metrics", "MetricValue": "metrics", "TaskScore": "metrics",
    "Option": "options", "OptionError": "options", "Benchmark": "plugin", "BenchmarkInfo": "plugin",
    "EpisodeEnv": "plugin", "PaperNumbers": "plugin", "all_benchmarks": "registry", "get_benchmark": "registry",
    "load_benchmark": "registry",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _HOME, name)


__all__ = [
    "Anomaly",
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
