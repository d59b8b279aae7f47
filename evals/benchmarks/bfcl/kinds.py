"""The kinds of BFCL entries behind one protocol, and the one catalog that serves them all.

BFCL's categories come in kinds that are served, run, checked and shown in ways of their own: the
single-turn categories (functions answered with a placeholder, :mod:`.single_turn`), the multi-turn
ones (BFCL's stateful backends, :mod:`.multi_turn_episode`) and the memory ones (a memory backend
per session, prerequisite conversations, :mod:`.memory_run`). Each is one implementation of
:class:`Kind`; :data:`KINDS` is the one place that says which kind serves a category;
:class:`BfclCatalog` is the one :class:`tool_specs.Catalog` of a run (every kind's endpoints, each
answered by its own kind), and the plugin hands every other question about an entry to the kind
that holds it.

Adding a kind is one class with the members of :class:`Kind` (in the module of its episodes) and
one line of :data:`KINDS` naming its categories (added to ``files.py``'s lists) and how it is made
from them, the run's name and its ``--benchmark-option`` values (web search, :mod:`.web_search`, is
such a kind); nothing else dispatches on a category.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from tool_specs.catalog import TaskNotFound

from .files import FORMAT_SENSITIVITY, MEMORY_SERVED, MEMORY_VECTOR, MULTI_TURN, NAME, SINGLE_TURN, WEB_SEARCH
from .single_turn import SingleTurnKind
from .tools import first_by_name

if TYPE_CHECKING:
    from client.runs import EpisodeOutcome, EpisodeRecorder
    from tool_specs import ToolSpec

    from ...core.plugin import EpisodeEnv
    from .agentic import AgenticVerdict
    from .checker import Verdict

__all__ = ["KINDS", "BfclCatalog", "Kind", "kinds_for"]


class Kind(Protocol):
    """One kind of BFCL entry. ``entries``: task id -> entry (with ``id``, ``category`` and
    ``query``), in BFCL's order; ``endpoints()``: the endpoint ids it serves (its entries', and any
    other its episodes open: a memory scenario's prerequisite conversations); ``serve()``: called once
    when the catalog is made (what its tools need is read or started there, never when a plugin is
    only loaded, as by ``evals score``); ``playground_tools()``: its tools for an endpoint without a
    task; ``averdict``: the verdict as scoring asks for it (concurrent scorings: a kind may batch
them, as the multi-turn kind does its replays); ``view``: the entry's sections in ``evals view``."""

    @property
    def entries(self) -> Mapping[str, Any]: ...
    def endpoints(self) -> list[str]: ...
    def serve(self) -> None: ...
    def task_tools(self, endpoint: str) -> list[ToolSpec]: ...
    def playground_tools(self) -> list[ToolSpec]: ...
    async def episode(self, env: EpisodeEnv, task_id: str, recorder: EpisodeRecorder) -> EpisodeOutcome: ...
    def verdict(self, task_id: str, trace: Mapping[str, Any] | None) -> Verdict | AgenticVerdict: ...
    async def averdict(self, task_id: str, trace: Mapping[str, Any] | None) -> Verdict | AgenticVerdict: ...
    def view(self, task_id: str, trace: Mapping[str, Any] | None,
             score: Mapping[str, Any] | None) -> list[dict[str, Any]]: ...


def _multi_turn(categories: tuple[str, ...], name: str, options: Mapping[str, Any]) -> Kind:
    # imported only when a run holds multi-turn entries (not by the scoring of a single-turn folder: it and the
    # memory kind's modules are about 20 ms of imports)
    from .multi_turn_episode import MultiTurnKind

    return MultiTurnKind(categories, name)


def _memory(categories: tuple[str, ...], name: str, options: Mapping[str, Any]) -> Kind:
    from .memory_run import MemoryKind  # imported only when a run holds memory entries

    return MemoryKind(categories, name)


def _web_search(categories: tuple[str, ...], name: str, options: Mapping[str, Any]) -> Kind:
    from .web_search import WebSearchKind  # imported only when a run names web search

    return WebSearchKind(categories, name, options.get("bfcl_search_endpoint"))


#: Each kind with the categories it serves, in BFCL's order, and how it is made from them, the run's
#: name and options: the one place that decides an entry's kind.
KINDS: tuple[tuple[tuple[str, ...], Callable[[tuple[str, ...], str, Mapping[str, Any]], Kind]], ...] = (
    (SINGLE_TURN + (FORMAT_SENSITIVITY,), lambda categories, name, options: SingleTurnKind(categories, name)),
    (MULTI_TURN, _multi_turn),
    (MEMORY_SERVED + (MEMORY_VECTOR,), _memory),
    (WEB_SEARCH, _web_search),
)


def kinds_for(categories: Sequence[str], name: str = NAME, options: Mapping[str, Any] | None = None) -> list[Kind]:
    """The kinds serving ``categories``, each made with the ones it serves (a kind with none is left out)."""
    chosen = [(tuple(c for c in categories if c in served), make) for served, make in KINDS]
    return [make(mine, name, options or {}) for mine, make in chosen if mine]


class BfclCatalog:
    """The :class:`tool_specs.Catalog` of the served entries: every kind's endpoints, in the kinds'
    order, each answered by its kind."""

    def __init__(self, kinds: Sequence[Kind], name: str = NAME) -> None:
        self.name = name
        self.kinds = list(kinds)
        self._kind = {endpoint: kind for kind in self.kinds for endpoint in kind.endpoints()}
        for kind in self.kinds:
            kind.serve()

    def task_ids(self) -> list[str]:
        return list(self._kind)

    def task_tools(self, task_id: str) -> list[ToolSpec]:
        kind = self._kind.get(task_id)
        if kind is None:
            raise TaskNotFound(task_id, self._kind, catalog=self.name)
        return kind.task_tools(task_id)

    def playground_tools(self) -> list[ToolSpec]:
        return first_by_name(spec for kind in self.kinds for spec in kind.playground_tools())
