"""Loading the project's TOML data files (prompt templates, judge profiles) into pydantic models."""

from __future__ import annotations

import hashlib
import os
import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import OrchestratorError

__all__ = ["data_dirs", "load_toml_model", "find_data_file"]

M = TypeVar("M", bound=BaseModel)


def data_dirs(env_var: str, folder: str, extra: list[Path] | None = None) -> list[Path]:
    """Lookup order, first match wins: ``extra``, the directories in ``$env_var``, ``./folder``,
    then ``folder`` in this checkout."""
    dirs = list(extra or [])
    if os.environ.get(env_var):
        dirs += [Path(p) for p in os.environ[env_var].split(os.pathsep) if p]
    dirs += [Path.cwd() / folder, Path(__file__).resolve().parents[2] / folder]
    seen, out = set(), []
    for d in dirs:
        key = d.resolve()
        if key not in seen and d.is_dir():
            seen.add(key)
            out.append(d)
    return out


def load_toml_model(path: str | Path, model: type[M], what: str, *, name_is_file_name: bool = True) -> M:
    """Parse ``path`` as TOML into ``model`` (with ``digest`` = sha256 of the file when the model has it).

    Raises:
        OrchestratorError: unreadable file, bad TOML, an invalid field, or a ``name`` that differs
            from the file name — always naming the file.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise OrchestratorError(f"{path}: cannot read {what} ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise OrchestratorError(f"{path}: not valid TOML ({exc})") from None
    if "digest" in model.model_fields:
        data["digest"] = hashlib.sha256(raw).hexdigest()
    try:
        obj = model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or what
        got = (
            f" (got {first['input']!r})"
            if first["type"] not in ("missing", "extra_forbidden") and not isinstance(first.get("input"), dict)
            else ""
        )
        near = nearest_key(model, first["loc"]) if first["type"] == "extra_forbidden" else None
        hint = f" (did you mean {near!r}?)" if near else ""
        raise OrchestratorError(f"{path}: {where}: {first['msg'].removeprefix('Value error, ')}{got}{hint}"[:400]) from None
    if name_is_file_name and getattr(obj, "name", path.stem) != path.stem:
        raise OrchestratorError(f"{path}: name {getattr(obj, 'name', '')!r} does not match the file name {path.stem!r}")
    return obj


def nearest_key(model: type[BaseModel], loc: tuple) -> str | None:
    """The valid key closest to the unknown last one of ``loc`` (a typo: ``max_cals`` → ``max_calls``),
    looked up in the (sub-)model that holds it, or None."""
    import difflib
    import typing

    current: Any = model
    parts = list(loc)
    while len(parts) > 1 and current is not None:
        part = parts.pop(0)
        field = current.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return None
        current = None
        for kind in (field.annotation, *typing.get_args(field.annotation)):
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                current = kind
            elif typing.get_origin(kind) is dict and isinstance(typing.get_args(kind)[-1], type):
                value = typing.get_args(kind)[-1]
                if issubclass(value, BaseModel) and len(parts) > 1:  # [table.NAME]: the name is data
                    parts.pop(0)
                    current = value
    if current is None or not isinstance(parts[0], str):
        return None
    found = difflib.get_close_matches(parts[0], list(current.model_fields), n=1, cutoff=0.75)
    return found[0] if found else None


def find_data_file(name: str, dirs: list[Path], what: str) -> Path:
    """``<dir>/<name>.toml`` from the first directory that has it.

    Raises:
        OrchestratorError: not found, listing what is available.
    """
    for d in dirs:
        path = d / f"{name}.toml"
        if path.is_file():
            return path
    available = sorted({p.stem for d in dirs for p in d.glob("*.toml")})
    raise OrchestratorError(f"no {what} {name!r}; available: {', '.join(available) or 'none'}")
