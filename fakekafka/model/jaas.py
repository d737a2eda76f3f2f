"""JAAS login configuration lines, as Kafka reads a broker's `listener.name.<listener>.<mechanism>.sasl.jaas.config`.

Kafka's JaasConfig tokenizes the value with java.io.StreamTokenizer set up so: bytes 0-32 are white space, `;`
and `=` separate, `"` and `'` quote (with Java's backslash escapes), `/` starts a comment (`//`, `/* */`, and a
lone `/` to the end of the line), every other character is part of a word. An entry is `<login module class>
<control flag> (<key>=<value>)* ;`; JaasContext.loadServerContext wants exactly one. The errors are Kafka's
IllegalArgumentException messages. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["JaasEntry", "JaasError", "parse_jaas_config", "server_jaas_entry"]

CONTROL_FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")


class JaasError(ValueError):
    """A JAAS line Kafka refuses: the message is Kafka's."""


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    control_flag: str
    """Upper case, as javax.security.auth.login.AppConfigurationEntry.LoginModuleControlFlag names it."""
    options: dict[str, str] = field(default_factory=dict)


_EOF = "EOF"
_WORD = "WORD"
_QUOTE = "QUOTE"
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _word_char(c: str) -> bool:
    o = ord(c)
    return (32 < o <= 128 or 160 <= o) and c not in ";='\"/"


def _tokens(text: str) -> list[tuple[str, str | None]]:
    """(kind, text) tokens as Kafka's StreamTokenizer yields them: words, quoted strings (their content), and
    ordinary characters (`;`, `=`, or a character that is none of the others: kind is the character, text
    None, as StreamTokenizer's sval is then null)."""
    out: list[tuple[str, str | None]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if ord(c) <= 32:
            i += 1
        elif c == "/":
            if text.startswith("/*", i):
                end = text.find("*/", i + 2)
                i = n if end < 0 else end + 2
            else:  # `//` and, `/` being a comment character, a lone `/`: to the end of the line
                while i < n and text[i] not in "\r\n":
                    i += 1
        elif c in "\"'":
            i, value = _quoted(text, i + 1, c)
            out.append((_QUOTE, value))
        elif _word_char(c):
            start = i
            while i < n and _word_char(text[i]):
                i += 1
            out.append((_WORD, text[start:i]))
        else:
            out.append((c, None))
            i += 1
    out.append((_EOF, None))
    return out


def _quoted(text: str, i: int, quote: str) -> tuple[int, str]:
    """A quoted string from after its opening quote to its closing one (or, as Java's, the end of the line or
    of the text): the index after it and its content, backslash escapes applied."""
    n, chars = len(text), []
    while i < n and text[i] != quote and text[i] not in "\r\n":
        c = text[i]
        i += 1
        if c == "\\" and i < n:
            c = text[i]
            i += 1
            if c in _ESCAPES:
                c = _ESCAPES[c]
            elif "0" <= c <= "7":  # octal: up to three digits, the first at most 3 for three
                digits = c
                while i < n and len(digits) < (3 if digits[0] <= "3" else 2) and "0" <= text[i] <= "7":
                    digits += text[i]
                    i += 1
                c = chr(int(digits, 8))
        chars.append(c)
    if i < n and text[i] == quote:
        i += 1
    return i, "".join(chars)


def parse_jaas_config(text: str) -> list[JaasEntry]:
    """Every entry of a JAAS configuration value; JaasError with Kafka's message if it is malformed."""
    tokens = _tokens(text)
    pos = 0

    def advance() -> tuple[str, str | None]:
        nonlocal pos
        token = tokens[min(pos, len(tokens) - 1)]
        pos += 1
        return token

    entries: list[JaasEntry] = []
    kind, value = advance()
    while kind != _EOF:
        module = value
        kind, flag = advance()
        if kind == _EOF:
            raise JaasError("Login module control flag not specified in JAAS config")
        if flag is None:
            raise JaasError("Login module control flag is not available in the JAAS config")
        if flag.upper() not in CONTROL_FLAGS:
            raise JaasError(f"Invalid login module control flag '{flag}' in JAAS config")
        options: dict[str, str] = {}
        kind, key = advance()
        while kind not in (_EOF, ";"):
            sep, _ = advance()
            value_kind, option = advance() if sep == "=" else (_EOF, None)
            if sep != "=" or value_kind == _EOF or option is None:
                raise JaasError(f"Value not specified for key '{'null' if key is None else key}' in JAAS config")
            options["null" if key is None else key] = option
            kind, key = advance()
        if kind != ";":
            raise JaasError("JAAS config entry not terminated by semi-colon")
        if not module:  # AppConfigurationEntry's own check, an IllegalArgumentException without a message
            raise JaasError("Login module not specified in JAAS config")
        entries.append(JaasEntry(module, flag.upper(), options))
        kind, value = advance()
    if not entries:
        raise JaasError("Login module not specified in JAAS config")
    return entries


def server_jaas_entry(text: str) -> JaasEntry:
    """The one login module of a broker's listener- and mechanism-prefixed sasl.jaas.config, as Kafka's
    JaasContext.loadServerContext takes it."""
    entries = parse_jaas_config(text)
    if len(entries) != 1:
        raise JaasError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]
