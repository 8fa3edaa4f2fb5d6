"""The small expression language of adaptive content: section, site-space and page `condition`s
such as `visitor.claims.plan == "pro" && !visitor.claims.unsigned.beta`.

GitBook writes conditions in JavaScript syntax; this is the safe subset a docs condition needs,
parsed by a recursive-descent parser into a tree and evaluated by walking it — never `eval`.

Grammar (whitespace between tokens is free):

    expression := or
    or         := and ( "||" and )*
    and        := comparison ( "&&" comparison )*
    comparison := unary ( ( "==" | "===" | "!=" | "!==" | "<" | "<=" | ">" | ">=" | "in" ) unary )?
    unary      := "!" unary | operand
    operand    := literal | path | "(" expression ")" | "[" ( expression ( "," expression )* )? "]"
    path       := root ( "." name | "[" string "]" )*
    literal    := number | string ('…' or "…", with \\ escapes) | true | false | null

Semantics: a missing property is `undefined` and compares equal
to nothing but itself; `==` and `===` are both strict (no JavaScript coercions); `<`… compare two
numbers or two strings, anything else is false; `a in b` is membership when `b` is a list and a
key test when `b` is an object; the condition holds when its value is truthy (JavaScript's rule).

Bounds: MAX_LENGTH characters and MAX_DEPTH nested operands, so parsing and evaluating are linear
and a hostile condition costs microseconds. Every failure is an ExpressionError with a message fit
for a 400."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

MAX_LENGTH: Final = 1024
MAX_DEPTH: Final = 32


class ExpressionError(ValueError):
    """The text is not a condition this grammar accepts; the message says where and why."""


class _Undefined:
    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED: Final = _Undefined()


# -- the tree ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Literal:
    value: Any


@dataclass(frozen=True, slots=True)
class Path:
    root: str
    keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ListOf:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    operand: Node


@dataclass(frozen=True, slots=True)
class Binary:
    op: str
    left: Node
    right: Node


Node = Literal | Path | ListOf | Not | Binary

# -- tokens --------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<op>===|!==|==|!=|<=|>=|&&|\|\||[<>!()\[\].,])
  | (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
    """,
    re.VERBOSE,
)
_COMPARISONS = frozenset({"==", "===", "!=", "!==", "<", "<=", ">", ">=", "in"})
_KEYWORDS = {"true": True, "false": False, "null": None}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # number, string, op, name, end
    text: str
    at: int


def _unquote(text: str, at: int) -> str:
    out: list[str] = []
    i, end = 1, len(text) - 1
    while i < end:
        ch = text[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ExpressionError(f"Bad \\u escape in the string at character {at + 1}")
            code = int(digits, 16)
            if 0xD800 <= code <= 0xDFFF:
                raise ExpressionError(f"Lone surrogate escape in the string at character {at + 1}")
            out.append(chr(code))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ExpressionError(f"Unexpected character {text[pos]!r} at character {pos + 1}")
        kind = match.lastgroup or ""
        if kind != "space":
            out.append(_Token(kind, match.group(), pos))
        pos = match.end()
    out.append(_Token("end", "", len(text)))
    return out


# -- parsing -------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str, roots: frozenset[str]) -> None:
        self.tokens = _tokens(text)
        self.i = 0
        self.roots = roots
        self.depth = 0

    def peek(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def expect(self, text: str) -> None:
        token = self.take()
        if token.text != text or token.kind not in ("op", "name"):
            raise ExpressionError(f"Expected {text!r} at character {token.at + 1}{_seen(token)}")

    def descend(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"The condition nests deeper than {MAX_DEPTH} levels")

    def expression(self) -> Node:
        self.descend()
        node = self.conjunction()
        while self.peek().text == "||" and self.peek().kind == "op":
            self.take()
            node = Binary("||", node, self.conjunction())
        self.depth -= 1
        return node

    def conjunction(self) -> Node:
        node = self.comparison()
        while self.peek().text == "&&" and self.peek().kind == "op":
            self.take()
            node = Binary("&&", node, self.comparison())
        return node

    def unary(self) -> Node:
        if self.peek().text == "!" and self.peek().kind == "op":
            self.take()
            self.descend()
            node = Not(self.unary())
            self.depth -= 1
            return node
        return self.operand()

    def comparison(self) -> Node:
        # As in JavaScript, `!` binds tighter than a comparison: `!a == b` is `(!a) == b`.
        left = self.unary()
        token = self.peek()
        if token.text in _COMPARISONS and token.kind in ("op", "name"):
            self.take()
            right = self.unary()
            nxt = self.peek()
            if nxt.text in _COMPARISONS and nxt.kind in ("op", "name"):
                raise ExpressionError(
                    f"Comparisons do not chain: add parentheses at character {nxt.at + 1}"
                )
            return Binary(token.text, left, right)
        return left

    def operand(self) -> Node:
        token = self.take()
        if token.kind == "number":
            value = float(token.text)
            if value in (float("inf"), float("-inf")):
                raise ExpressionError(f"The number at character {token.at + 1} is out of range")
            return Literal(int(value) if value.is_integer() and abs(value) < 2**53 else value)
        if token.kind == "string":
            return Literal(_unquote(token.text, token.at))
        if token.kind == "name":
            if token.text in _KEYWORDS:
                return Literal(_KEYWORDS[token.text])
            return self.path(token)
        if token.text == "(":
            node = self.expression()
            self.expect(")")
            return node
        if token.text == "[":
            self.descend()
            items: list[Node] = []
            if self.peek().text != "]":
                items.append(self.expression())
                while self.peek().text == ",":
                    self.take()
                    items.append(self.expression())
            self.expect("]")
            self.depth -= 1
            return ListOf(tuple(items))
        raise ExpressionError(f"Expected a value at character {token.at + 1}{_seen(token)}")

    def path(self, root: _Token) -> Node:
        if root.text not in self.roots:
            known = ", ".join(sorted(self.roots))
            raise ExpressionError(
                f"Unknown name {root.text!r} at character {root.at + 1}; a condition starts "
                f"from {known}"
            )
        keys: list[str] = []
        while self.peek().text in (".", "[") and self.peek().kind == "op":
            if self.take().text == ".":
                name = self.take()
                if name.kind != "name":
                    raise ExpressionError(
                        f"Expected a property name at character {name.at + 1}{_seen(name)}"
                    )
                keys.append(name.text)
            else:
                key = self.take()
                if key.kind != "string":
                    raise ExpressionError(
                        f"Expected a quoted property name at character {key.at + 1}"
                    )
                keys.append(_unquote(key.text, key.at))
                self.expect("]")
            if len(keys) > MAX_DEPTH:
                raise ExpressionError(f"The property path is longer than {MAX_DEPTH} names")
        return Path(root.text, tuple(keys))


def _seen(token: _Token) -> str:
    return ", found the end" if token.kind == "end" else f", found {token.text!r}"


def parse(text: str, roots: frozenset[str] = frozenset({"visitor"})) -> Node:
    """The tree of `text`, or ExpressionError. `roots` are the names a path may start from."""
    if not isinstance(text, str):
        raise ExpressionError("A condition is a string")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"A condition is at most {MAX_LENGTH} characters")
    if not text.strip():
        raise ExpressionError("The condition is empty")
    parser = _Parser(text, roots)
    node = parser.expression()
    end = parser.peek()
    if end.kind != "end":
        raise ExpressionError(f"Unexpected {end.text!r} at character {end.at + 1}")
    return node


def check(text: str, roots: frozenset[str] = frozenset({"visitor"})) -> None:
    """Raises ExpressionError unless `text` parses: what saving a condition runs."""
    parse(text, roots)


# -- evaluation ----------------------------------------------------------------------------------


def _truthy(value: Any) -> bool:
    if value is UNDEFINED or value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == value and value != 0  # NaN is falsy too
    if isinstance(value, str):
        return value != ""
    return True  # objects and lists, even empty ones, as in JavaScript


def _same(a: Any, b: Any) -> bool:
    # Strict equality: booleans are not numbers here, unlike Python's True == 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list | tuple) or isinstance(b, list | tuple):
        return a is b  # JavaScript compares arrays by identity
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        return a is b
    return type(a) is type(b) and a == b


def _order(op: str, a: Any, b: Any) -> bool:
    numbers = (
        isinstance(a, int | float)
        and isinstance(b, int | float)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    )
    if not numbers and not (isinstance(a, str) and isinstance(b, str)):
        return False
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def _contains(a: Any, b: Any) -> bool:
    if isinstance(b, list | tuple):
        return any(_same(a, item) for item in b)
    if isinstance(b, Mapping):
        return isinstance(a, str) and a in b
    return False


def _value(node: Node, scope: Mapping[str, Any]) -> Any:
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, Path):
        value: Any = scope.get(node.root, UNDEFINED)
        for key in node.keys:
            if isinstance(value, Mapping):
                value = value.get(key, UNDEFINED)
            elif isinstance(value, list | tuple) and key == "length":
                value = len(value)
            else:
                return UNDEFINED
        return value
    if isinstance(node, ListOf):
        return [_value(item, scope) for item in node.items]
    if isinstance(node, Not):
        return not _truthy(_value(node.operand, scope))
    left = _value(node.left, scope)
    op = node.op
    # && and || short-circuit and give an operand, as JavaScript's do.
    if op == "&&":
        return _value(node.right, scope) if _truthy(left) else left
    if op == "||":
        return left if _truthy(left) else _value(node.right, scope)
    right = _value(node.right, scope)
    if op in ("==", "==="):
        return _same(left, right)
    if op in ("!=", "!=="):
        return not _same(left, right)
    if op == "in":
        return _contains(left, right)
    return _order(op, left, right)


def holds(node: Node, scope: Mapping[str, Any]) -> bool:
    """Whether the condition is true for `scope` (e.g. `{"visitor": {"claims": {...}}}`)."""
    return _truthy(_value(node, scope))


@functools.lru_cache(maxsize=4096)
def _parsed(text: str, roots: frozenset[str]) -> Node:
    # Conditions are few distinct texts read on every request: each is parsed once per process
    # (a 1,024-character one took milliseconds, times every page of a site).
    return parse(text, roots)


def evaluate(text: str, scope: Mapping[str, Any]) -> bool:
    """Evaluates a condition's text, parsed once and kept (ExpressionError if it does not
    parse, each time: errors are not kept)."""
    return holds(_parsed(text, frozenset(scope) | {"visitor"}), scope)


def render(node: Node) -> str:
    """Canonical text of a tree: parse(render(t)) == t. Used by tests and for error messages."""
    if isinstance(node, Literal):
        if node.value is None:
            return "null"
        if isinstance(node.value, bool):
            return "true" if node.value else "false"
        return json.dumps(node.value, ensure_ascii=False)
    if isinstance(node, Path):
        out = node.root
        for key in node.keys:
            out += (
                f".{key}"
                if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", key)
                else (f"[{json.dumps(key, ensure_ascii=False)}]")
            )
        return out
    if isinstance(node, ListOf):
        return "[" + ", ".join(render(item) for item in node.items) + "]"
    if isinstance(node, Not):
        return f"!({render(node.operand)})"
    return f"({render(node.left)} {node.op} {render(node.right)})"


def shows(condition: str | None, scope: Mapping[str, Any] | None) -> bool:
    """Whether an item (section, site space, page) with this condition is shown. `scope` None
    is a member's view: every item. A stored condition that no longer parses (saved before
    conditions were checked) hides its item rather than showing it to everyone."""
    if condition is None or scope is None:
        return True
    try:
        return evaluate(condition, scope)
    except ExpressionError:
        return False
