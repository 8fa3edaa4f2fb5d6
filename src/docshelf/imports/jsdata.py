"""The data a JavaScript or TypeScript module exports (a Docusaurus `sidebars.js`/`.ts`), read as
text and never run: object and array literals, strings, numbers, booleans, and names bound to
them by `const`/`let`/`var` earlier in the module. Anything else (a call, a function, an
expression, a `require`) is `UNKNOWN`, and what holds it is still read.

Hand-written because no well-kept Python library reads TypeScript (esprima and pyjsparser read
ES5-ES2017 JavaScript only: a `sidebars.ts`' type annotations, `satisfies` and `as` make them
fail the whole file), and the subset needed is small. One pass over the tokens; nesting is
bounded, so a hostile module costs linear time and bounded recursion.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["UNKNOWN", "NotData", "exported"]

MAX_DEPTH = 64
MAX_TOKENS = 2_000_000


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


class NotData(ValueError):
    """The module exports nothing that can be read as data."""


_TOKEN = re.compile(
    r"""(?P<space>\s+|//[^\n]*)
    |(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\$]|\\.|\$(?!\{))*`)
    |(?P<template>`)
    |(?P<number>-?(?:0[xX][0-9a-fA-F_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d+)?))
    |(?P<name>[A-Za-z_$][\w$]*)
    |(?P<spread>\.\.\.)
    |(?P<punct>=>|[{}\[\]():,;=.?<>!&|+\-*/%@#^~])""",
    re.X | re.S,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|\n|.)", re.S)


def _unescape(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        s = m.group(1)
        if s.startswith("u{"):
            return chr(min(int(s[2:-1], 16), 0x10FFFF))
        if s[0] in "ux" and len(s) > 1:
            return chr(int(s[1:], 16))
        if s == "\n":
            return ""
        return _ESCAPES.get(s, s)

    return _ESCAPE.sub(one, body)


def _number(text: str) -> Any:
    try:
        if text.lstrip("-")[:2].lower() == "0x":
            return int(text, 16)
        value = float(text)
    except ValueError:
        return UNKNOWN
    return int(value) if value.is_integer() and not any(c in text for c in ".eE") else value


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text.startswith("/*", pos):  # found by find, not a pattern: one pass, even unclosed
            end = text.find("*/", pos + 2)
            pos = len(text) if end < 0 else end + 2
            continue
        m = _TOKEN.match(text, pos)
        if m is None:
            out.append(("other", text[pos]))
            pos += 1
            continue
        pos = m.end()
        kind = m.lastgroup or "other"
        if kind == "space":
            continue
        if kind == "template":  # a template with `${...}`: not data
            out.append(("other", "`"))
            end = text.find("`", pos)
            pos = len(text) if end < 0 else end + 1
            continue
        out.append((kind, m.group(0)))
        if len(out) > MAX_TOKENS:
            raise NotData("the module is too large to read")
    return out


_OPEN = {"{": "}", "[": "]", "(": ")"}
_ENDS = {("punct", c) for c in ",;)]}"}


class _Reader:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.t = tokens
        self.i = 0
        self.names: dict[str, Any] = {}

    def peek(self, ahead: int = 0) -> tuple[str, str]:
        n = self.i + ahead
        return self.t[n] if n < len(self.t) else ("end", "")

    def skip_expression(self) -> None:
        """Past one expression: up to a `,` `;` or closing bracket outside brackets."""
        depth = 0
        while self.i < len(self.t):
            kind, text = self.t[self.i]
            if kind == "punct" and text in _OPEN:
                depth += 1
            elif kind == "punct" and text in ")]}":
                if depth == 0:
                    return
                depth -= 1
            elif kind == "punct" and text in ",;" and depth == 0:
                return
            self.i += 1

    def value(self, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise NotData(f"data nested more than {MAX_DEPTH} deep")
        start = self.i
        kind, text = self.peek()
        if kind == "punct" and text == "{":
            out: Any = self.obj(depth)
        elif kind == "punct" and text == "[":
            out = self.arr(depth)
        elif kind == "string":
            self.i += 1
            out = _unescape(text[1:-1])
        elif kind == "number":
            self.i += 1
            out = _number(text.replace("_", ""))
        elif kind == "name" and text in ("true", "false", "null", "undefined"):
            self.i += 1
            out = {"true": True, "false": False}.get(text)
        elif kind == "name":
            self.i += 1
            out = self.names.get(text, UNKNOWN)
        else:
            out = UNKNOWN
        # `as T`, `satisfies T`: the value stands; anything else but the end of the value
        # (`(`, `.`, `+`, `?`...) makes it an expression, not data. A name after it is the next
        # statement (no semicolon).
        nxt = self.peek()
        if nxt[0] == "name" and nxt[1] in ("as", "satisfies"):
            self.i += 1
            self.skip_type()
        elif nxt[0] != "name" and nxt[0] != "end" and nxt not in _ENDS:
            self.i = start
            self.skip_expression()
            return UNKNOWN
        return out

    def skip_type(self) -> None:
        """Past a type after `as` or `satisfies`: a dotted name with type arguments."""
        if self.peek()[0] == "name":
            self.i += 1
        while True:
            kind, text = self.peek()
            if (kind, text) == ("punct", ".") and self.peek(1)[0] == "name":
                self.i += 2
            elif (kind, text) == ("punct", "<"):
                depth = 0
                while self.i < len(self.t):
                    k, x = self.t[self.i]
                    self.i += 1
                    depth += (x == "<") - (x == ">") if k == "punct" else 0
                    if depth == 0:
                        break
            elif (kind, text) == ("punct", "[") and self.peek(1) == ("punct", "]"):
                self.i += 2
            else:
                return

    def obj(self, depth: int) -> dict[str, Any]:
        self.i += 1  # {
        out: dict[str, Any] = {}
        while True:
            kind, text = self.peek()
            if kind == "end":
                raise NotData("an object is not closed")
            if kind == "punct" and text == "}":
                self.i += 1
                return out
            if kind == "punct" and text == ",":
                self.i += 1
                continue
            if kind == "spread":
                self.i += 1
                spread = self.value(depth + 1)
                if isinstance(spread, dict):
                    out.update(spread)
                continue
            key: str | None = None
            if kind in ("name", "number"):
                key = text
            elif kind == "string":
                key = _unescape(text[1:-1])
            if key is not None:
                self.i += 1
                sep = self.peek()
                if sep == ("punct", ":"):
                    self.i += 1
                    out[key] = self.value(depth + 1)
                    continue
                if sep[0] == "punct" and sep[1] in ",}" and kind == "name":
                    out[key] = self.names.get(key, UNKNOWN)  # shorthand `{ name }`
                    continue
            self.skip_expression()  # a method, a computed key, a getter: not data

    def arr(self, depth: int) -> list[Any]:
        self.i += 1  # [
        out: list[Any] = []
        while True:
            kind, text = self.peek()
            if kind == "end":
                raise NotData("an array is not closed")
            if kind == "punct" and text == "]":
                self.i += 1
                return out
            if kind == "punct" and text == ",":
                self.i += 1
                continue
            if kind == "spread":
                self.i += 1
                spread = self.value(depth + 1)
                if isinstance(spread, list):
                    out.extend(spread)
                continue
            before = self.i
            out.append(self.value(depth + 1))
            if self.i == before:
                self.i += 1  # a stray token: step over it

    def declaration_type(self) -> None:
        """Past a TypeScript annotation (`: SidebarsConfig`) up to the `=`."""
        depth = 0
        while self.i < len(self.t):
            kind, text = self.t[self.i]
            if kind == "punct" and text in "<([{":
                depth += 1
            elif kind == "punct" and text in ">)]}":
                depth -= 1
            elif kind == "punct" and text in "=;" and depth <= 0:
                return
            self.i += 1


def exported(text: str) -> Any:
    """What the module exports (`module.exports = ...`, `export default ...`), as data."""
    reader = _Reader(_tokens(text))
    found: Any = UNKNOWN
    t = reader.t
    while reader.i < len(t):
        kind, word = t[reader.i]
        if kind == "name" and word in ("const", "let", "var") and reader.peek(1)[0] == "name":
            name = reader.peek(1)[1]
            reader.i += 2
            if reader.peek() == ("punct", ":"):
                reader.declaration_type()
            if reader.peek() == ("punct", "="):
                reader.i += 1
                reader.names[name] = reader.value()
            continue
        if (
            kind == "name"
            and word == "module"
            and reader.peek(1) == ("punct", ".")
            and reader.peek(2) == ("name", "exports")
            and reader.peek(3) == ("punct", "=")
        ):
            reader.i += 4
            found = reader.value()
            continue
        if kind == "name" and word == "export" and reader.peek(1) == ("name", "default"):
            reader.i += 2
            found = reader.value()
            continue
        reader.i += 1
    if found is UNKNOWN:
        raise NotData("no module.exports or export default that is data")
    return found
