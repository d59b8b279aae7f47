"""A small real tool used by ``unit_converter.yaml``: convert a quantity between units."""

from __future__ import annotations

# Factors to the base unit of each dimension (metre, kilogram, second, litre).
_FACTORS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "mi": ("length", 1609.344),
    "g": ("mass", 0.001),
    "kg": ("mass", 1.0),
    "lb": ("mass", 0.45359237),
    "oz": ("mass", 0.028349523125),
    "s": ("time", 1.0),
    "min": ("time", 60.0),
    "h": ("time", 3600.0),
    "ml": ("volume", 0.001),
    "l": ("volume", 1.0),
    "gal": ("volume", 3.785411784),
}
_TEMPERATURES = ("C", "F", "K")


def _to_kelvin(value: float, unit: str) -> float:
    if unit == "C":
        return value + 273.15
    if unit == "F":
        return (value - 32.0) * 5.0 / 9.0 + 273.15
    return value


def _from_kelvin(value: float, unit: str) -> float:
    if unit == "C":
        return value - 273.15
    if unit == "F":
        return (value - 273.15) * 9.0 / 5.0 + 32.0
    return value


def convert(value: float, from_unit: str, to_unit: str, precision: int = 6) -> dict[str, object]:
    """Convert ``value`` from ``from_unit`` to ``to_unit``.

    Supports length (mm, cm, m, km, in, ft, mi), mass (g, kg, lb, oz), time (s, min, h), volume
    (ml, l, gal) and temperature (C, F, K). Raises ``ValueError`` for unknown or incompatible units.
    """
    if from_unit in _TEMPERATURES or to_unit in _TEMPERATURES:
        if from_unit not in _TEMPERATURES or to_unit not in _TEMPERATURES:
            raise ValueError(f"cannot convert between {from_unit!r} and {to_unit!r}")
        result = _from_kelvin(_to_kelvin(value, from_unit), to_unit)
        dimension = "temperature"
    else:
        try:
            dim_from, factor_from = _FACTORS[from_unit]
            dim_to, factor_to = _FACTORS[to_unit]
        except KeyError as exc:
            known = ", ".join([*_FACTORS, *_TEMPERATURES])
            raise ValueError(f"unknown unit {exc.args[0]!r}; known units: {known}") from None
        if dim_from != dim_to:
            raise ValueError(f"cannot convert {dim_from} ({from_unit!r}) to {dim_to} ({to_unit!r})")
        result = value * factor_from / factor_to
        dimension = dim_from
    return {
        "value": round(result, precision),
        "unit": to_unit,
        "dimension": dimension,
        "expression": f"{value:g} {from_unit} = {round(result, precision):g} {to_unit}",
    }
