"""your own tasks (a JSONL/YAML task file) over your own tools (spec files, a KG, any MCP server); call
exact match, tool, argument and answer accuracy with breakdowns by the tasks' metadata

The folder, low to high (each module imports only those before it):

* ``task_file.schema.json``: the published JSON Schema of one task;
* ``variables``: ``${NAME}`` values from ``--var`` and the environment, as ``config.json`` records them;
* ``answers``: final-answer matching (exact, normalised, regex, number, judge);
* ``refs``: references from a gold call's arguments to an earlier call's result;
* ``checks``: state checks (calls the harness makes after an episode) and their expectations;
* ``taskfile``: reading and checking a task file (every problem at once, ``FILE:LINE``);
* ``scoring``: one task's scores from its trace (the core's matchers, ``align_calls``);
* ``sources``: the tools (spec files, a KG, MCP servers live, recorded or replayed, or started per episode);
* ``episodes``: an episode's own folder and servers, its set-up and its state checks;
* ``view``: an episode in ``evals view`` (gold calls beside predicted, gold answer beside the final one);
* ``plugin``: the ``evals run`` plugin (the ``agent`` strategy, the oracle, export, the episode view).

This module only declares it (nothing is read but the small ``variables`` module, for ``--var``'s check).
"""

from __future__ import annotations

from pathlib import Path

from ...core.metrics import Metric
from ...core.options import Option
from ...core.plugin import BenchmarkInfo

NAME = "taskfile"
SCHEMA = Path(__file__).with_name("task_file.schema.json")


def _file(v: str | None) -> str | None:
    return None if v is None or Path(v).is_file() else f"no such file: {v}"


def _var(v: str | None) -> str | None:
    from .variables import var_problem  # here: `evals --help` imports no tool_specs

    return var_problem(v)


def _allow_env(v: str | None) -> str | None:
    from .variables import allow_env_problem

    return allow_env_problem(v)


def _dir(v: str | None) -> str | None:
    return None if v is None or Path(v).is_dir() else f"no such directory: {v}"


OPTIONS: tuple[Option, ...] = (
    Option("tasks", str, None, "the task file: JSON Lines or YAML (schema: evals/benchmarks/usertasks/"
           "task_file.schema.json)", check=_file, metavar="FILE"),
    Option("tools_dir", str, None, "a folder of tool spec files (YAML/JSON of this project, OpenAI function "
           "tools JSON, BFCL function docs JSON/JSONL), answered by their executors", check=_dir, metavar="DIR"),
    Option("kg", str, None, "a family KG triple file (one ['head', 'relation', 'tail'] per line) served as the KG "
           "tools", check=_file, metavar="FILE"),
    Option("kg_search", str, "greedy", "what kg_search_path does when a relation path does not exist",
           choices=("exact", "greedy", "retrieval")),
    Option("mcp_server", str, None, "an MCP server whose tools the tasks use: a command line run over stdio "
           "(e.g. 'uvx mcp-server-time'), or a streamable-HTTP URL; NAME=... names it", metavar="CMD|URL"),
    Option("mcp_config", str, None, "MCP servers in the mcpServers JSON format of assistant clients (command, "
           "args, env, cwd; or url, headers, bearer_token_env)", check=_file, metavar="FILE"),
    Option("mcp_token_env", str, None, "the environment variable holding the bearer token of an --mcp-server URL",
           affects_results=False, metavar="VAR"),
    Option("record", str, None, "append every real response of the MCP servers to this file (JSON Lines), to "
           "replay later with --replay", affects_results=False, metavar="FILE"),
    Option("replay", str, None, "answer the MCP servers' tools from a recording made with --record (no server "
           "is started)", check=_file, metavar="FILE"),
    Option("var", str, None, "a value for ${NAME} in the task file and the MCP servers' command lines and URLs "
           "(repeatable)", check=_var, metavar="NAME=VALUE", multiple=True),
    Option("allow_env", str, None, "let ${NAME} not given by --var be read from the environment variable NAME "
           "(repeatable; no other is read; config.json records only its name and a SHA-256 of its value)",
           check=_allow_env, metavar="NAME", multiple=True),
    Option("trust_task_servers", bool, False, "start the MCP servers a YAML task file declares under servers: "
           "(commands the file names, run on this machine: give it only for a task file you trust)"),
    Option("fresh_servers", bool, False, "start every stdio MCP server afresh for each episode (a server whose "
           "settings name ${EPISODE_DIR} always is), so that no episode sees another's state"),
    Option("matcher", str, "rule", "how a call is matched to a gold call: rule (equal after type normalisation), "
           "response (then: the same response from a deterministic tool), llm (then: the judge, --judge)",
           choices=("rule", "response", "llm")),
)

METRICS = (
    Metric("call_exact_match", "Call exact match", description="the task's calls are exactly the gold calls "
           "(in the gold order unless the task is unordered)"),
    Metric("tool_accuracy", "Tool accuracy", over="gold calls", description="gold calls answered by a call of the "
           "same tool"),
    Metric("argument_accuracy", "Argument accuracy", over="gold arguments", description="gold arguments given the "
           "gold value by the paired call"),
    Metric("answer_accuracy", "Answer accuracy", description="final answers that satisfy the gold answer"),
    Metric("state_accuracy", "State accuracy", description="tasks whose state checks all hold after the episode "
           "(calls the harness makes, with expectations on their results)"),
    Metric("informative_results", "Tool results with content", over="tool results", in_breakdowns=False,
           description="tool results that are neither errors nor empty (no text, or only empty lists and objects)"),
    Metric("uninformative_run", "Every tool result empty or an error", higher_is_better=False, kind="mean",
           in_breakdowns=False, derived_from=("informative_results",), derive=lambda f: 1.0 if f == 0 else 0.0,
           warn="every tool result of the run was empty or an error: the server may have been started without its "
                "data (check its command, env and files); the scores say nothing about the model"),
    Metric("oracle_failures", "Tasks the oracle failed", higher_is_better=False, kind="count", in_breakdowns=False,
           warn="the oracle failed {n:g} task(s): the tools cannot give the gold (a gold call returned an error, a "
                "state check failed, or the gold answer is not in what the gold calls returned); the tasks' scores "
                "details say which under oracle"),
    Metric("regex_timeouts", "Task-file patterns that ran out of time", higher_is_better=False, kind="count",
           over="searches", in_breakdowns=False,
           warn="{n:g} search(es) of a task file's pattern ran past the time limit and scored as not matched; "
                "the tasks' scores details list them under regex_timeouts"),
)


INFO = BenchmarkInfo(
    name=NAME, plugin=".plugin:UserTasksBenchmark", scorer_version=2,  # CHANGELOG.md
    options=OPTIONS, metrics=METRICS, uses_judge=True,
    served_by_default=False,  # its tasks come from --tasks FILE
    dataset_option="tasks",  # runs of different task files are never ranked or compared as one
    headline_metrics=("call_exact_match", "tool_accuracy", "argument_accuracy", "answer_accuracy", "state_accuracy",
                      "regex_timeouts"),
)
BENCHMARKS = (INFO,)
