"""The modules behind :mod:`client.runs`; import their public names from ``client.runs``.

Low to high:

* ``jsonutil``: JSON conversion shared by every file of a run (``to_jsonable``, ``canonical_json``,
  ``error_info``).
* ``records``: the trace record format (``SCHEMA_VERSION``, ``Totals``, ``EpisodeOutcome``,
  ``request_history``).
* ``sharing``: what a trace keeps of a long value (each tool-call argument once; the cap).
* ``toolstore``: ``tools.jsonl``, each tool list of a run once (``ToolLists``, ``resolve_tools``).
* ``recorder``: ``EpisodeRecorder``, one episode's events as they happen and its record.
* ``jsonl``: append-only JSONL files, torn-line repair and scanning (``TraceScan``: headers in
  memory, events read back on access).
* ``secrets``: keys, tokens and passwords replaced before a config or report is written.
* ``config``: ``config.json``, written once and compared on re-open (``RunConfigMismatch``,
  ``config_hash``).
* ``resume``: which tasks a resumed run skips, and the run's ``RunSummary``.
* ``rundir``: ``RunDir``, the directory itself: its files, the one-writer lock, durable trace appends
  and reading it back (that module's docstring describes the layout and the durability guarantees).

(A package named ``runs/`` would be caught by the project's ``.gitignore``, which keeps run
directories out of git.)
"""

__all__: list[str] = []
