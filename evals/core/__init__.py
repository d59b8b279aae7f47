"""The benchmark-neutral core of ``evals``: the contracts a benchmark folder fills in (options,
metrics, the benchmark itself), the registry that finds the folders, and (in submodules imported on
use) the run pipeline, scoring, the judge, serving and data fetching. See ``docs/architecture.md``.

The public names of the modules below (each module's own ``__all__``) are exported here, each
imported on first use (:mod:`client.lazy`), so that ``evals --help`` does not load the judge's MCP
stack. Type checkers see them as ``Any``: import them from their modules for their types."""

from client.lazy import LazyExports

_EXPORTS = LazyExports(__name__, ("anomalies", "context", "data", "metrics", "options", "plugin", "registry"))
__getattr__ = _EXPORTS.attribute
__all__ = _EXPORTS.names
