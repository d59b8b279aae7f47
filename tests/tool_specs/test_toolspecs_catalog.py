"""Catalog protocol, StaticCatalog, and name suggestions."""

from __future__ import annotations

import pytest

from tool_specs import (
    Catalog,
    StaticCatalog,
    TaskNotFound,
    ToolNotFound,
    ToolSpec,
    find_tool,
    load_spec_dir,
    suggest_names,
)
from tool_specs.examples import EXAMPLES_DIR


def tools(*names: str, description: str = "") -> list[ToolSpec]:
    return [ToolSpec(name=n, description=description) for n in names]


def test_static_catalog_with_tasks() -> None:
    catalog = StaticCatalog(
        "familytool-b",
        {
            "t1": tools("set_alarm", "cancel_alarm"),
            "t2": tools("cancel_alarm", "GetWeather", description="2nd"),
        },
        extra_playground=tools("GetWeather", "ping"),
    )
    assert isinstance(catalog, Catalog)
    assert catalog.name == "familytool-b"
    assert catalog.task_ids() == ["t1", "t2"]
    assert [t.name for t in catalog.task_tools("t2")] == ["cancel_alarm", "GetWeather"]
    playground = catalog.playground_tools()
    assert [t.name for t in playground] == ["set_alarm", "cancel_alarm", "GetWeather", "ping"]
    assert {t.name: t.description for t in playground}["GetWeather"] == "2nd"  # tasks win over extras
    # callers cannot mutate the catalog through returned lists
    catalog.task_tools("t1").clear()
    catalog.playground_tools().clear()
    assert len(catalog.task_tools("t1")) == 2 and len(catalog.playground_tools()) == 4


def test_unknown_task_id() -> None:
    catalog = StaticCatalog("bench", {"KGMTUbench_10": tools("a")})
    with pytest.raises(TaskNotFound) as info:
        catalog.task_tools("KGMTUbench_1O")
    assert isinstance(info.value, KeyError)
    assert (
        str(info.value)
        == "Unknown task id 'KGMTUbench_1O' in catalog 'bench' (1 tasks). Did you mean 'KGMTUbench_10'?"
    )


def test_spec_dir_catalog_has_no_tasks() -> None:
    catalog = StaticCatalog("user-tools", {}, extra_playground=load_spec_dir(EXAMPLES_DIR))
    assert catalog.task_ids() == []
    assert [t.name for t in catalog.playground_tools()] == [
        "book_table",
        "search_flights",
        "get_weather",
        "convert_units",
    ]


def test_duplicate_tool_in_one_task_is_rejected() -> None:
    with pytest.raises(ValueError, match="task 't1' of catalog 'c' lists tool 'a' twice"):
        StaticCatalog("c", {"t1": tools("a", "a")})


def test_suggest_names() -> None:
    known = ["GetWeather", "date_of_journey", "set_alarm", "cancel_alarm", "get_weather_forecast"]
    assert suggest_names("date of journey", known)[0] == "date_of_journey"
    assert suggest_names("getweather", known)[0] == "GetWeather"
    assert suggest_names("set_alarms", known)[0] == "set_alarm"
    assert suggest_names("zzz", known) == []
    assert len(suggest_names("alarm", known * 3, n=2)) <= 2
    assert suggest_names("a", []) == []


def test_tool_not_found_message() -> None:
    specs = tools("set_alarm", "cancel_alarm")
    assert find_tool(specs, "cancel_alarm").name == "cancel_alarm"
    with pytest.raises(ToolNotFound) as info:
        find_tool(specs, "set_alarms", where="task t1")
    assert isinstance(info.value, KeyError)
    assert str(info.value) == (
        "Unknown tool 'set_alarms' in task t1. Did you mean 'set_alarm' or 'cancel_alarm'? "
        "Available tools: set_alarm, cancel_alarm."
    )
    assert "No tools are available" in str(ToolNotFound("x"))
