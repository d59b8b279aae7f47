"""Choice of the embedded graph engine: Kuzu (default) or its maintained fork LadybugDB.

The two share a Python API but cannot be imported into one process, so the engine module is imported
lazily, here and only here, from the ``EVALS_KG_ENGINE`` environment variable (``kuzu`` or
``ladybug``) or an explicit name.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .errors import KGError

__all__ = ["ENGINE_ENV_VAR", "ENGINES", "Engine", "engine_name", "load_engine"]

ENGINE_ENV_VAR = "EVALS_KG_ENGINE"
DEFAULT_ENGINE = "kuzu"

# engine name -> (module to import, database file name inside the store directory, pip package)
_ENGINE_INFO: dict[str, tuple[str, str, str]] = {
    "kuzu": ("kuzu", "graph.kuzu", "kuzu"),
    "ladybug": ("ladybug", "graph.lbug", "ladybug"),
}
ENGINES: tuple[str, ...] = tuple(_ENGINE_INFO)


@dataclass(frozen=True)
class Engine:
    """A loaded engine: its name, its Python module and how a store uses it."""

    name: str
    module: ModuleType
    db_filename: str

    @property
    def version(self) -> str:
        """The engine package's version string."""
        return str(getattr(self.module, "__version__", "unknown"))

    def database(self, path: str, *, read_only: bool, buffer_pool_size: int = 0) -> Any:
        """Open (or create, when not read-only) the database file at ``path`` (``buffer_pool_size``
        in bytes; 0: the engine's default, most of the machine's memory)."""
        return self.module.Database(path, read_only=read_only, buffer_pool_size=buffer_pool_size)

    def connect(self, database: Any) -> Any:
        """Open a connection configured for this engine.

        LadybugDB 0.22 can return rows of an earlier parameter binding when a cached parameterised
        multi-hop query is re-run; turning its prepared-statement cache off on every connection avoids it.
        """
        conn = self.module.Connection(database)
        if self.name == "ladybug":
            conn.execute("CALL enable_cached_prepared_statement='NONE'")
        return conn

    @property
    def supports_prepare(self) -> bool:
        """Whether ``Connection.prepare`` is safe and worth using (Kuzu: yes; LadybugDB: see ``connect``)."""
        return self.name == "kuzu"


def engine_name(name: str | None = None) -> str:
    """Resolve the engine name: ``name`` if given, else ``$EVALS_KG_ENGINE``, else ``"kuzu"``.

    Raises:
        KGError: the name is not one of :data:`ENGINES`.
    """
    raw = name if name is not None else os.environ.get(ENGINE_ENV_VAR, "")
    resolved = raw.strip().lower() or DEFAULT_ENGINE
    if resolved not in _ENGINE_INFO:
        source = "engine argument" if name is not None else f"${ENGINE_ENV_VAR}"
        raise KGError(f"unknown KG engine {raw!r} (from {source}); choose one of: {', '.join(ENGINES)}")
    return resolved


def load_engine(name: str | None = None) -> Engine:
    """Import and return the engine selected by ``name`` / ``$EVALS_KG_ENGINE``.

    Raises:
        KGError: unknown name, the package is not installed, or the other engine is already imported
            in this process (Kuzu and LadybugDB cannot share a process).
    """
    resolved = engine_name(name)
    module_name, db_filename, package = _ENGINE_INFO[resolved]
    for other, (other_module, _, _) in _ENGINE_INFO.items():
        if other != resolved and other_module in sys.modules:
            raise KGError(
                f"cannot load KG engine {resolved!r}: {other!r} is already imported in this process and "
                f"the two cannot be used in one process; set {ENGINE_ENV_VAR} consistently"
            )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise KGError(
            f"KG engine {resolved!r} is not installed ({exc}); install it with `pip install {package}`"
        ) from exc
    return Engine(name=resolved, module=module, db_filename=db_filename)
