"""JSON Schema to GBNF exactly as llama-server converts it.

A line-by-line port of llama.cpp's ``common/json-schema-to-grammar.cpp`` (the converter behind
llama-server's ``json_schema`` and ``response_format``), so that a schema constrains Corral's
sampling to the same grammar, rule for rule and byte for byte (tests/worker/sampling/
schema_grammar_goldens.json holds llama.cpp's own output). llama-cpp-python ships an older port
with other spacing and integer rules, hence this one.

llama.cpp works on UTF-8 bytes: rule names, the sorted rule order and patterns all see bytes.
To match it everywhere, the converter works on the "byte view" of text (each UTF-8 byte one
latin-1 character) and turns the grammar back into text at the end.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from worker.sampling.json_schema import (
    INT64_MAX,
    INT64_MIN,
    AllOf,
    AnyOf,
    AnyValue,
    ArrayOf,
    Const,
    Enum,
    Integer,
    ObjectOf,
    Primitive,
    Ref,
    Schema,
    SchemaError,
    StringOf,
    Tuple,
    read_schema,
)
from worker.sampling.schema_limits import OptionalWeight, check_schema_size
from worker.sampling.schema_pattern import InvalidPattern, UnsupportedPattern, pattern_to_rule
from worker.sampling.schema_rules import (
    INT_MAX,
    PRIMITIVE_RULES,
    SPACE_RULE,
    STRING_FORMAT_RULES,
    build_min_max_int,
    build_repetition,
    dump,
    format_literal,
)

__all__ = ["SchemaError", "SchemaRules", "json_schema_to_grammar"]

_log = logging.getLogger(__name__)
_INVALID_RULE_CHARS = re.compile(r"[^a-zA-Z0-9-]+")
_RESERVED_NAMES = frozenset({"root", *PRIMITIVE_RULES, *STRING_FORMAT_RULES})
_INT_RANGE = (-(2**63), 2**64 - 1)  # nlohmann's int64 and uint64
_DOT = "[^\\x0A\\x0D]"  # llama-server converts schemas without dotall


def _byte_view(value: Any) -> Any:
    """Every string in ``value`` as its UTF-8 bytes, one latin-1 character each; and, as in
    llama.cpp's JSON, an integer past 64 bits a double."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not _INT_RANGE[0] <= value <= _INT_RANGE[1]
    ):
        return float(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("latin-1")
    if isinstance(value, list):
        return [_byte_view(v) for v in value]
    if isinstance(value, dict):
        return {_byte_view(k): _byte_view(v) for k, v in value.items()}
    return value


def _text(view: str) -> str:
    return view.encode("latin-1").decode("utf-8", "replace")


def _with_suffix(name: str, suffix: str) -> str:
    return name + ("-" if name else "") + suffix


class _Converter:
    def __init__(self) -> None:
        self.rules: dict[str, str] = {"space": SPACE_RULE}
        self.refs_being_resolved: set[tuple[str, str]] = set()
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.optional_weight = OptionalWeight()

    def add_rule(self, name: str, rule: str) -> str:
        esc_name = _INVALID_RULE_CHARS.sub("-", name)
        if self.rules.get(esc_name, rule) == rule:
            self.rules[esc_name] = rule
            return esc_name
        i = 0
        while self.rules.get(f"{esc_name}{i}", rule) != rule:
            i += 1
        self.rules[f"{esc_name}{i}"] = rule
        return f"{esc_name}{i}"

    def add_primitive(self, name: str, rule: tuple[str, tuple[str, ...]]) -> str:
        added = self.add_rule(name, rule[0])
        for dep in rule[1]:
            dep_rule = PRIMITIVE_RULES.get(dep) or STRING_FORMAT_RULES.get(dep)
            if dep_rule is None:
                self.errors.append(f"Rule {dep} not known")
            elif dep not in self.rules:
                self.add_primitive(dep, dep_rule)
        return added

    def visit_primitive(self, rule_name: str, kind: str) -> str:
        return self.add_primitive("root" if rule_name == "root" else kind, PRIMITIVE_RULES[kind])

    def visit_pattern(self, pattern: str, name: str) -> str:
        snapshot = dict(self.rules)
        try:
            return pattern_to_rule(pattern, name, self.add_rule, _DOT)
        except UnsupportedPattern as exc:
            self.rules = snapshot
            self.warnings.append(
                f"pattern {pattern} is not supported ({exc}), accepting any string"
            )
            return self.add_rule(name, self.add_primitive("string", PRIMITIVE_RULES["string"]))
        except InvalidPattern as exc:
            self.rules = snapshot
            self.errors.append(f"Invalid pattern {pattern}: {exc}")
            return ""

    def not_strings(self, strings: list[str]) -> str:
        """A JSON string that is none of ``strings``, through a trie of their characters."""
        trie: dict[str, Any] = {}
        ends_at_root = False
        for word in strings:
            node = trie
            for char in _text(word):
                node = node.setdefault(char, {})
            ends_at_root = ends_at_root or not word
        char_rule = self.add_primitive("char", PRIMITIVE_RULES["char"])
        out: list[str] = ['["] ( ']

        def visit(node: dict[str, Any]) -> None:
            rejects = ""
            for index, char in enumerate(sorted(node)):
                c = _byte_view(char)
                rejects += c
                out.append(("" if index == 0 else " | ") + f"[{c}]")
                if node[char]:
                    out.append(" (")
                    visit(node[char])
                    out.append(")")
                else:
                    out.append(f" {char_rule}+")
            if node:
                out.append(f' | [^"{rejects}] {char_rule}*')

        visit(trie)
        out.append(" )" + ("" if ends_at_root else "?") + ' ["]')
        return "".join(out)

    def resolve_ref(self, ref: Ref) -> str:
        fragment = ref.ref.split("#", 1)[1] if "#" in ref.ref else ref.ref
        ref_name = ref.scope + "ref" + _INVALID_RULE_CHARS.sub("-", fragment)
        key = (ref.scope, ref.ref)
        if ref_name not in self.rules and key not in self.refs_being_resolved:
            if ref.target is None:
                self.errors.append(f"Unresolved $ref {ref.ref}")
                return ""
            self.refs_being_resolved.add(key)
            ref_name = self.visit(ref.target, ref_name)
            self.refs_being_resolved.discard(key)
        return ref_name

    def object_rule(
        self,
        properties: list[tuple[str, Schema]],
        required: set[str],
        name: str,
        additional: Schema | None,
    ) -> str:
        required_props: list[str] = []
        optional_props: list[str] = []
        kv_rules: dict[str, str] = {}
        for prop_name, prop_schema in properties:
            prop_rule = self.visit(prop_schema, _with_suffix(name, prop_name))
            kv_rules[prop_name] = self.add_rule(
                _with_suffix(name, prop_name + "-kv"),
                f'{format_literal(dump(prop_name))} space ":" space {prop_rule}',
            )
            (required_props if prop_name in required else optional_props).append(prop_name)
        if additional is not None:
            sub_name = _with_suffix(name, "additional")
            value_rule = (
                self.add_primitive("value", PRIMITIVE_RULES["value"])
                if isinstance(additional, AnyValue)
                else self.visit(additional, sub_name + "-value")
            )
            prop_names = [prop_name for prop_name, _ in properties]
            key_rule = (
                self.add_rule(sub_name + "-k", self.not_strings(prop_names))
                if prop_names
                else self.add_primitive("string", PRIMITIVE_RULES["string"])
            )
            kv_rules["*"] = self.add_rule(sub_name + "-kv", f'{key_rule} ":" space {value_rule}')
            optional_props.append("*")
        # Counted again here: allOf merges its objects' properties into one.
        self.optional_weight.add(len(optional_props))
        if not required_props and not optional_props:
            return '"{" space "}"'
        rule = '"{" space ' + ' "," space '.join(kv_rules[p] for p in required_props)
        if optional_props:
            rule += " (" + (' "," space ( ' if required_props else "")

            def recursive_refs(keys: list[str], first_is_optional: bool) -> str:
                key, kv_rule = keys[0], kv_rules[keys[0]]
                comma_ref = f'( "," space {kv_rule} )'
                if first_is_optional:
                    res = comma_ref + ("*" if key == "*" else "?")
                else:
                    res = kv_rule + (" " + comma_ref + "*" if key == "*" else "")
                if len(keys) > 1:
                    rest = recursive_refs(keys[1:], True)
                    res += " " + self.add_rule(_with_suffix(name, key + "-rest"), rest)
                return res

            rule += " | ".join(
                recursive_refs(optional_props[i:], False) for i in range(len(optional_props))
            )
            rule += (" )" if required_props else "") + " )?"
        return rule + ' space "}"'

    def visit_all_of(self, schema: AllOf, name: str, rule_name: str) -> str:
        required: set[str] = set()
        properties: list[tuple[str, Schema]] = []
        enum_counts: dict[str, int] = {}

        def add_component(comp: Schema, is_required: bool) -> None:
            if isinstance(comp, Ref):
                if comp.target is not None:
                    add_component(comp.target, is_required)
            elif isinstance(comp, ObjectOf):
                for prop_name, prop_schema, _ in comp.properties:
                    properties.append((prop_name, prop_schema))
                    if is_required:
                        required.add(prop_name)
            elif isinstance(comp, Enum):
                for value in comp.values:
                    literal = format_literal(dump(value))
                    enum_counts[literal] = enum_counts.get(literal, 0) + 1

        for child in schema.children:
            if isinstance(child, AnyOf):
                for alt in child.children:
                    add_component(alt, False)
            else:
                add_component(child, True)
        common = [v for v in sorted(enum_counts) if enum_counts[v] == len(schema.children)]
        if common:
            return self.add_rule(rule_name, "(" + " | ".join(common) + ")")
        return self.add_rule(rule_name, self.object_rule(properties, required, name, None))

    def visit(self, schema: Schema, name: str) -> str:
        rule_name = name + "-" if name in _RESERVED_NAMES else name or "root"
        if isinstance(schema, Ref):
            return self.add_rule(rule_name, self.resolve_ref(schema))
        if isinstance(schema, AnyOf):
            prefix = name + "-" if name else "alternative-"
            alts = [self.visit(alt, f"{prefix}{i}") for i, alt in enumerate(schema.children)]
            return self.add_rule(rule_name, " | ".join(alts))
        if isinstance(schema, AllOf):
            return self.visit_all_of(schema, name, rule_name)
        if isinstance(schema, Const):
            return self.add_rule(rule_name, format_literal(dump(schema.value)))
        if isinstance(schema, Enum):
            values = " | ".join(format_literal(dump(v)) for v in schema.values)
            return self.add_rule(rule_name, f"({values})")
        if isinstance(schema, ObjectOf):
            if not schema.properties and isinstance(schema.additional, AnyValue):
                return self.add_rule(
                    rule_name, self.add_primitive("object", PRIMITIVE_RULES["object"])
                )
            properties = [(prop_name, prop) for prop_name, prop, _ in schema.properties]
            required = {prop_name for prop_name, _, is_required in schema.properties if is_required}
            return self.add_rule(
                rule_name, self.object_rule(properties, required, name, schema.additional)
            )
        if isinstance(schema, Tuple):
            items = ' "," space '.join(
                self.visit(item, _with_suffix(name, f"tuple-{i}"))
                for i, item in enumerate(schema.items)
            )
            return self.add_rule(rule_name, f'"[" space {items} space "]"')
        if isinstance(schema, ArrayOf):
            return self.visit_array(schema, name, rule_name)
        if isinstance(schema, StringOf):
            return self.visit_string(schema, rule_name)
        if isinstance(schema, Integer):
            if schema.minimum == INT64_MIN and schema.maximum == INT64_MAX:
                return self.visit_primitive(rule_name, "integer")
            out = ["("]
            build_min_max_int(out, schema.minimum, schema.maximum)
            return self.add_rule(rule_name, "".join(out) + ")")
        if isinstance(schema, Primitive):
            return self.visit_primitive(rule_name, schema.kind)
        return self.add_rule(rule_name, self.add_primitive("value", PRIMITIVE_RULES["value"]))

    def visit_array(self, schema: ArrayOf, name: str, rule_name: str) -> str:
        if isinstance(schema.items, AnyValue) and schema.min_items == 0 and schema.max_items < 0:
            return self.visit_primitive(rule_name, "array")
        item_rule = self.visit(schema.items, _with_suffix(name, "item"))
        max_items = INT_MAX if schema.max_items < 0 else schema.max_items
        items = build_repetition(item_rule, schema.min_items, max_items, '"," space')
        return self.add_rule(rule_name, f'"[" space {items} space "]"')

    def visit_string(self, schema: StringOf, rule_name: str) -> str:
        if schema.pattern:
            return self.visit_pattern(schema.pattern, rule_name)
        if schema.format == "uuid":
            return self.visit_primitive(rule_name, "uuid")
        if schema.format:
            prim_name = schema.format + "-string"
            return self.add_rule(
                rule_name, self.add_primitive(prim_name, STRING_FORMAT_RULES[prim_name])
            )
        if schema.min_length > 0 or schema.max_length >= 0:
            char_rule = self.add_primitive("char", PRIMITIVE_RULES["char"])
            max_len = INT_MAX if schema.max_length < 0 else schema.max_length
            chars = build_repetition(char_rule, schema.min_length, max_len)
            return self.add_rule(rule_name, f'"\\"" {chars} "\\""')
        return self.visit_primitive(rule_name, "string")

    def grammar(self) -> str:
        if self.errors:
            raise SchemaError("JSON schema conversion failed:\n" + "\n".join(self.errors))
        if self.warnings:
            _log.warning("JSON schema conversion was incomplete: %s", "; ".join(self.warnings))
        return "".join(f"{name} ::= {rule}\n" for name, rule in sorted(self.rules.items()))


class SchemaRules:
    """The rules of several JSON Schemas in one grammar, as llama.cpp's tool-call grammars hold
    each tool's (worker/chat/formats): each schema's rule under a name the caller gives, the
    rules they share (``space``, ``string``…) written once, each document's ``$ref`` rules
    named apart. Errors are llama.cpp's, raised as SchemaError."""

    def __init__(self) -> None:
        self._converter = _Converter()

    def read(self, schema: Any, name: str, root: Any = None) -> Schema:
        """``schema`` (decoded JSON) as nodes, to stand for a part of a schema given to
        :meth:`add`; its ``#/`` references point into ``root`` (by default itself), their rules
        named after ``name``."""
        scope = _byte_view(name) + "-" if name else ""
        with _conversion_errors():
            return read_schema(_byte_view(schema), _byte_view(root), scope)

    def add(self, schema: Any, name: str, root: Any = None) -> str:
        """The rule of ``schema`` (decoded JSON, in which :meth:`read`'s nodes may stand), named
        ``name`` ("" names it ``root``); ``root`` as for :meth:`read`."""
        node = self.read(schema, name, root)
        with _conversion_errors():
            return _text(self._converter.visit(node, _byte_view(name)))

    def gbnf(self) -> str:
        """Every rule added, one a line (no newline after the last)."""
        return _text(self._converter.grammar()).rstrip("\n")


@contextmanager
def _conversion_errors() -> Iterator[None]:
    try:
        yield
    except SchemaError as exc:
        raise SchemaError(f"JSON schema conversion failed:\n{exc}") from None
    except RecursionError:  # within the caps, only a pathological pattern or name gets here
        raise SchemaError("JSON schema conversion failed:\nnested too deeply") from None


def json_schema_to_grammar(schema: Any) -> str:
    """llama.cpp's GBNF for ``schema`` (decoded JSON); SchemaError with llama.cpp's message
    where it rejects the schema, and for a schema past Corral's size caps
    (:mod:`worker.sampling.schema_limits`), which llama.cpp does not have."""
    check_schema_size(schema)
    rules = SchemaRules()
    rules.add(schema, "")
    return rules.gbnf() + "\n"
