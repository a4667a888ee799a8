"""Reading YAML exactly as Helm and kubectl read it, with errors that say where.

Helm and kubectl parse with sigs.k8s.io/yaml: go-yaml v2 resolves plain scalars, then the result
is converted to JSON. That differs from PyYAML's YAML 1.1 in ways that break real charts: an
unquoted `=` (PyYAML: a constructor error), dates (PyYAML: `datetime`; Go: the string), `1:20`
(PyYAML: sexagesimal 80; Go: a string), `0o755` / `1e3` (PyYAML: strings; Go: 493 / 1000),
`08` (PyYAML: a string; Go: the float 8). Map keys become strings (`yes:` -> "true", `1:` ->
"1"), and what JSON cannot hold (`.inf`, `.nan`) is an error, as it is for kubectl. So every
plain scalar goes through `_resolve`, a transcription of go-yaml v2's `resolve`, and numbers
come out as the JSON Helm sends (integral floats are integers). Used for templates' output,
CRD files, values files and component sets alike; `dump` writes YAML that reads back the same
(PyYAML leaves `y` or `1e3` unquoted, which kubectl would read as a boolean or a number).
"""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal
from typing import Any, ClassVar, cast

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
PLAIN = "tag:reconciler.kyma-project.io,2026:plain"
_MERGE = "tag:yaml.org,2002:merge"

# go-yaml v2 resolve.go: resolveMapList (plain scalars looked up as they are)
_KNOWN: dict[str, Any] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE"), True),
    **dict.fromkeys(("on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE"), False),
    **dict.fromkeys(("off", "Off", "OFF"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_LOOKED_UP = set("yYnNtTfFoO~.+-0123456789")  # go-yaml's resolveTable hints
_NUMERIC = set("+-0123456789")
# strconv.ParseInt(s, 0, 64): optional sign, then 0b / 0o / 0x / leading-0 octal / decimal
_GO_INT = re.compile(r"([+-]?)(0[bB][01]+|0[oO][0-7]+|0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_BASES = {"b": 2, "o": 8, "x": 16}
_GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")  # yamlStyleFloat
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")  # strconv.ParseFloat of ".5", ".5e3"


def _go_int(text: str) -> int | None:
    match = _GO_INT.fullmatch(text)
    if match is None:
        return None
    sign, digits = match.groups()
    if len(digits) > 1 and digits[0] == "0":
        prefix = digits[1].lower()
        value = int(digits[2:], _BASES[prefix]) if prefix in _BASES else int(digits[1:], 8)
    else:
        value = int(digits)
    value = -value if sign == "-" else value
    if -(2**63) <= value < 2**63 or (not sign and value < 2**64):  # ParseInt, then ParseUint
        return value
    return None


def _resolve(text: str) -> Any:
    """go-yaml v2's resolution of an untagged plain scalar (timestamps stay strings)."""
    if text and text[0] not in _LOOKED_UP:
        return text
    if text in _KNOWN:
        return _KNOWN[text]
    if text[0] == ".":
        return float(text) if _DOT_FLOAT.fullmatch(text) else text
    if text[0] in _NUMERIC:
        plain = text.replace("_", "")
        number = _go_int(plain)
        if number is not None:
            return number
        if _GO_FLOAT.fullmatch(plain):
            value = float(plain)
            return text if math.isinf(value) else value  # Go: out of range is no float
    return text


def _go_float_key(value: float) -> str:
    """strconv.FormatFloat(v, 'g', -1, 32), as sigs.k8s.io/yaml turns float keys into strings."""
    if math.isnan(value) or math.isinf(value):
        return {math.inf: ".inf", -math.inf: "-.inf"}.get(value, ".nan")
    single = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):
        text = f"{single:.{digits - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent = text.split("e")
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    power = int(exponent)
    if power < -4 or power >= 6:
        return f"{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    return f"{float(text):f}".rstrip("0").rstrip(".")


def _key(node: Node, key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return _go_float_key(key)
    raise yaml.constructor.ConstructorError(
        None, None, f"unsupported map key {key!r} (Kubernetes keys are strings)", node.start_mark
    )


_INT64 = range(-(2**63), 2**63)


def _json_value(node: Node, value: Any) -> Any:
    """The number as the apiserver reads the JSON Helm sends: an int64 when it is integral and
    in range (Go prints integral floats without a point), else a float64."""
    if isinstance(value, int) and not isinstance(value, bool) and value not in _INT64:
        return float(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"{getattr(node, 'value', value)} cannot be represented in JSON",
                node.start_mark,
            )
        if value.is_integer():
            printed = int(Decimal(repr(value)))  # Go's shortest digits, zero-padded
            return printed if printed in _INT64 else value
    return value


class Loader(_Base):  # type: ignore[valid-type,misc]
    """Safe loading with go-yaml v2's scalar resolution and sigs.k8s.io/yaml's key rules."""

    yaml_implicit_resolvers: ClassVar[dict[Any, list[tuple[str, re.Pattern[str]]]]] = {
        "<": [(_MERGE, re.compile(r"^(?:<<)$"))],
        None: [(PLAIN, re.compile(r"(?s).*"))],
    }

    def construct_plain(self, node: ScalarNode) -> Any:
        return _json_value(node, _resolve(node.value))

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[str, Any]:
        """Keys as strings; `<<` merges in document order, as go-yaml v2 does (a merge after
        an explicit key overrides it; within a merge list the earlier mapping wins)."""
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in reversed(sources):
                    if not isinstance(source, MappingNode):
                        raise yaml.constructor.ConstructorError(
                            None, None, "a merge key (<<) needs a mapping", source.start_mark
                        )
                    mapping.update(self.construct_mapping(source, deep=True))
                continue
            plain = key_node.tag == PLAIN  # keys are not JSON values: a float key stays float
            raw = _resolve(key_node.value) if plain else self.construct_object(key_node, deep=deep)
            mapping[_key(key_node, raw)] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_untagged(self, node: Node) -> Any:
        """A custom tag (`!foo`) is ignored, as go-yaml ignores it: the content as it is."""
        if isinstance(node, ScalarNode):
            return node.value
        if isinstance(node, SequenceNode):
            return self.construct_sequence(node, deep=True)
        return self.construct_mapping(cast(MappingNode, node), deep=True)

    def construct_timestamp_text(self, node: ScalarNode) -> str:
        return str(node.value)

    def construct_number(self, node: ScalarNode) -> Any:
        """`!!int` / `!!float`: as go-yaml resolves the text, then as JSON sends it."""
        return _json_value(node, _resolve(node.value))


Loader.add_constructor(PLAIN, Loader.construct_plain)
Loader.add_constructor("tag:yaml.org,2002:timestamp", Loader.construct_timestamp_text)
Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_number)
Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_number)
Loader.add_constructor(None, Loader.construct_untagged)


def load(text: str) -> Any:
    """One YAML document."""
    return yaml.load(text, Loader=Loader)


def load_all(text: str) -> list[Any]:
    """Every document of a YAML stream."""
    return list(yaml.load_all(text, Loader=Loader))


class Dumper(yaml.SafeDumper):
    """Safe dumping whose output `load` (and so kubectl and Helm) reads back unchanged."""

    def represent_str(self, data: str) -> yaml.ScalarNode:
        node = super().represent_str(data)
        if node.style is None and _resolve(data) != data:  # `y`, `1e3`, `0o7`: quote them
            node.style = '"'
        return node


Dumper.add_representer(str, Dumper.represent_str)


def dump(data: Any, *, sort_keys: bool = False) -> str:
    """YAML text of `data` that reads back (here, in kubectl, in Helm) as the same data."""
    return yaml.dump(data, Dumper=Dumper, sort_keys=sort_keys, allow_unicode=True)


def where(exc: yaml.YAMLError) -> str:
    """` at line N, column M: problem` for a YAML error (1-based), as far as PyYAML knows."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return f": {problem}"
    return f" at line {mark.line + 1}, column {mark.column + 1}: {problem}"
