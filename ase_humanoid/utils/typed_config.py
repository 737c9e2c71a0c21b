"""Build a config dataclass from a plain mapping (Hydra node, keyword arguments) with type checks.

Shared by the agent and env configs: an unknown key names the valid ones, a value of the wrong
type names the key and what was expected. Ints are accepted where floats are expected; any
sequence where a list is expected; paths and torch devices where a string is expected.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, Mapping, TypeVar

from ase_humanoid.errors import ConfigError, did_you_mean

C = TypeVar("C")


def config_from_mapping(cls: type[C], values: Mapping[str, Any] | None, kind: str) -> C:
    """`cls(**values)` after checking keys and types; calls `validate()` when the class has it.

    `kind` ("agent", "env") prefixes error messages: "unknown agent config key(s) ...".
    """
    values = dict(values or {})
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - fields)
    if unknown:
        hint = did_you_mean(unknown[0], fields) if len(unknown) == 1 else ""
        raise ConfigError(f"unknown {kind} config key(s) {unknown} for {cls.__name__}{hint}; "
                          f"valid keys: {sorted(fields)}")
    converted = {key: _coerce(f"{kind} config key '{key}'", value, hints[key]) for key, value in values.items()}
    config = cls(**converted)
    validate = getattr(config, "validate", None)
    if validate is not None:
        validate()
    return config


def check_finite_floats(config: Any, kind: str) -> None:
    """Raise ConfigError naming the first float field that is NaN or infinite: such a value
    passes every range comparison with NaN (or sits above any bound with inf) and silently
    turns a feature off or trains on NaN losses."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if _is_float_hint(hints[f.name]) and isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{kind} config key '{f.name}': must be a finite number, got {value}")


def _is_float_hint(hint: Any) -> bool:
    if hint is float:
        return True
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and float in typing.get_args(hint)


def _coerce(where: str, value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _coerce(where, value, options[0])
    if origin is list:
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        (item_type,) = typing.get_args(hint) or (Any,)
        return [_coerce(where, v, item_type) for v in value]
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true/false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            # paths (pathlib) and torch devices are fine where a string is expected
            if hasattr(value, "__fspath__") or type(value).__name__ == "device":
                return str(value)
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    return value
