"""The benchmarks, one folder each. A folder's ``__init__`` lists its entries in ``BENCHMARKS``
(see :mod:`evals.core.registry`); ``docs/adding-a-benchmark.md`` walks through adding one."""
