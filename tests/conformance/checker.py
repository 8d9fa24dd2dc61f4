"""Checks a JSON value against a model of ``synapse_model`` (and a recorded exchange against its endpoint).

``check(model_name, value)`` lists the problems of ``value`` as a ``model_name`` (or any type expression of
synapse_model): a missing required field, a field the model does not have, a wrong JSON type, an unknown enum value,
a wrong or unknown ``concreteType``, and a null anywhere (Synapse never writes a null field). It recurses into nested
models, lists and maps. ``check_exchange(method, path, status, body)`` finds the Synapse endpoint of a recorded
exchange and checks its status and body against what Synapse answers there.

Its own tests import it as ``checker`` (pytest puts tests/conformance on ``sys.path``); any other test of the repository
as ``from tests.conformance.checker import check`` (the repository's root is on ``sys.path``: root conftest.py).
"""

from __future__ import annotations

import json
import re
from typing import Dict, List, Optional, Pattern, Tuple
from urllib.parse import urlsplit

if __package__:  # imported as tests.conformance.checker
    from .synapse_model import EMPTY, ENDPOINTS, ENUMS, MODELS, REDIRECT, TEXT_URL, Endpoint, Model
else:  # imported as checker, tests/conformance on sys.path
    from synapse_model import EMPTY, ENDPOINTS, ENUMS, MODELS, REDIRECT, TEXT_URL, Endpoint, Model

DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})$")
SCALARS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "date-time": lambda v: isinstance(v, str) and bool(DATE_TIME.match(v)),
}


def _json_type(value) -> str:
    for name, kind in (
        ("boolean", bool),
        ("integer", int),
        ("number", float),
        ("string", str),
        ("list", list),
        ("object", dict),
    ):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _short(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Checker:
    def __init__(self) -> None:
        self.problems: List[str] = []

    def problem(self, where: str, text: str) -> None:
        self.problems.append(f"{where}: {text}")

    def value(self, expr: str, value, where: str) -> None:
        if expr.endswith("?"):
            if value is None:
                return
            expr = expr[:-1]
        if value is None:
            self.problem(where, "null (Synapse leaves a field out instead)")
        elif expr.startswith("[") and expr.endswith("]"):
            if not isinstance(value, list):
                self.problem(where, f"a {_json_type(value)}, expected a list")
                return
            for index, item in enumerate(value):
                self.value(expr[1:-1], item, f"{where}[{index}]")
        elif expr.startswith("{") and expr.endswith("}"):
            if not isinstance(value, dict):
                self.problem(where, f"a {_json_type(value)}, expected a map")
                return
            for key, item in value.items():
                self.value(expr[1:-1], item, f"{where}.{key}")
        elif expr.startswith("enum:"):
            allowed = ENUMS[expr[5:]]
            if not isinstance(value, str) or value not in allowed:
                self.problem(where, f"{_short(value)} is not a value of {expr[5:]}")
        elif expr == "object":
            if not isinstance(value, dict):
                self.problem(where, f"a {_json_type(value)}, expected an object")
            else:
                self.no_nulls(value, where)
        elif expr in SCALARS:
            if not SCALARS[expr](value):
                self.problem(where, f"{_short(value)} is a {_json_type(value)}, expected {expr}")
        elif expr in MODELS:
            self.model(MODELS[expr], value, where)
        else:
            raise KeyError(f"synapse_model has no type {expr!r} (at {where})")

    def no_nulls(self, value, where: str) -> None:
        if value is None:
            self.problem(where, "null (Synapse leaves a field out instead)")
        elif isinstance(value, dict):
            for key, item in value.items():
                self.no_nulls(item, f"{where}.{key}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.no_nulls(item, f"{where}[{index}]")

    def model(self, model: Model, value, where: str) -> None:
        if not isinstance(value, dict):
            self.problem(where, f"a {_json_type(value)}, expected a {model.name} object")
            return
        if model.variants:
            self.variant(model, value, where)
            return
        for key, item in value.items():
            if key not in model.fields:
                self.problem(f"{where}.{key}", f"not a field of {model.name}")
                self.no_nulls(item, f"{where}.{key}")
            else:
                self.value(model.fields[key], item, f"{where}.{key}")
        required = model.required + (("concreteType",) if model.concrete_type else ())
        for key in required:
            if key not in value:
                self.problem(where, f"{model.name} lacks its required field {key!r}")
        given = value.get("concreteType")
        if model.concrete_type and isinstance(given, str) and given != model.concrete_type:
            self.problem(f"{where}.concreteType", f"{given!r}, expected {model.concrete_type!r}")

    def variant(self, model: Model, value: dict, where: str) -> None:
        by_type = {MODELS[name].concrete_type: MODELS[name] for name in model.variants}
        given = value.get("concreteType")
        if given is None:
            self.problem(where, f"a {model.name} without concreteType (one of {sorted(by_type)})")
        elif given not in by_type:
            self.problem(
                f"{where}.concreteType",
                f"{_short(given)} is not a {model.name} this suite knows ({', '.join(sorted(by_type))})",
            )
        else:
            self.model(by_type[given], value, where)


def check(model_name: str, value) -> List[str]:
    """The problems of ``value`` as a ``model_name`` (a model of synapse_model or a type expression); [] if none."""
    checker = _Checker()
    checker.value(model_name, value, "$")
    return checker.problems


# --- exchanges ------------------------------------------------------------------------------------------------------
def _compile(template: str) -> Pattern:
    parts = re.split(r"(\{[^}]+\})", template)
    return re.compile("^" + "".join("[^/]+" if part.startswith("{") else re.escape(part) for part in parts) + "$")


_COMPILED: List[Tuple[Endpoint, Pattern]] = [(endpoint, _compile(endpoint.template)) for endpoint in ENDPOINTS]


def endpoint_for(method: str, path: str) -> Optional[Endpoint]:
    """The Synapse endpoint of a request (``path`` may be a full URL, with a query), or None. A trailing slash is
    ignored, as Spring MVC's default trailing-slash match does for Synapse's controllers."""
    bare = urlsplit(path).path
    bare = bare[:-1] if len(bare) > 1 and bare.endswith("/") else bare
    for endpoint, pattern in _COMPILED:
        if endpoint.method == method.upper() and pattern.match(bare):
            return endpoint
    return None


def sample_path(endpoint: Endpoint, values: Optional[Dict[str, str]] = None) -> str:
    """The endpoint's path with its placeholders filled (defaults: ids ``syn1``, numbers ``1``)."""
    filled = dict({"id": "syn1", "version": "1", "handle": "1", "column": "1", "token": "1"}, **(values or {}))
    return re.sub(r"\{([^}]+)\}", lambda match: filled[match.group(1)], endpoint.template)


def answer_model(endpoint: Endpoint, status: int) -> Optional[str]:
    """The model (or REDIRECT / TEXT_URL) of an answer with this status, None for a status Synapse never answers."""
    if status in endpoint.answers:
        return endpoint.answers[status]
    if status == 429:
        return "ThrottleError"
    if status >= 400:
        return "ErrorResponse"
    return None


def check_exchange(method: str, path: str, status: int, body) -> List[str]:
    """The problems of a recorded exchange: ``path`` as requested (a URL or path, query allowed), the answer's
    status and body (parsed JSON, or its text or bytes). [] when Synapse would answer so."""
    endpoint = endpoint_for(method, path)
    where = f"{method.upper()} {urlsplit(path).path} -> {status}"
    if endpoint is None:
        return [f"{where}: no Synapse endpoint in synapse_model.ENDPOINTS"]
    model = answer_model(endpoint, status)
    if model is None:
        return [f"{where}: Synapse answers {sorted(endpoint.answers)} here, not {status} ({endpoint.source})"]
    if model == REDIRECT:
        return []
    if model == EMPTY:
        return [] if body in (None, "", b"") else [f"{where}: a void answer has no body, got {_short(str(body))}"]
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    if model == TEXT_URL:
        if not isinstance(body, str) or "://" not in body:
            return [f"{where}: expected a URL as text, got {_short(body) if not isinstance(body, str) else body!r}"]
        return []
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return [f"{where}: the body is not JSON: {body[:60]!r}"]
    return [f"{where}: {model} {problem}" for problem in check(model, body)]
