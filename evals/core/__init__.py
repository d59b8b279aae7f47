"""The benchmark-neutral core of ``evals``: the contracts a benchmark folder fills in (options,
metrics, the benchmark itself), the registry that finds the folders, the run pipeline, scoring, the
judge, serving and data fetching. See ``docs/architecture.md``. Import names from their modules
(``from evals.core.registry import get_benchmark``): the package exports nothing, so ``evals --help``
loads none of them."""

__all__: list[str] = []
