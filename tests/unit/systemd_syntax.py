"""An independent reader of the systemd unit syntax our templates emit, written from the man
pages (systemd.syntax(7), systemd.service(5), systemd.exec(5)), to check what a node's systemd
will actually pass to a process:

- a value is split into words at whitespace; "…" and '…' quote, C escapes (\\\\, \\", \\n…) apply;
- %-specifiers are expanded everywhere: a literal % must be written %%;
- Exec*= lines expand $NAME / ${NAME}: a literal $ must be written $$;
- Environment= does not: "Variable expansion is not performed inside the strings, and $ has no
  special meaning" (systemd.exec(5)).

Anything else (a lone % or $, an unknown escape) is reported as an error rather than guessed."""

from __future__ import annotations

_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
            "\\": "\\", '"': '"', "'": "'", "s": " "}


class UnitSyntaxError(ValueError):
    pass


def parse_unit(text: str) -> dict[str, list[tuple[str, str]]]:
    """{section: [(key, raw value), …]}, with backslash-newline continuations joined."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line[0] in "#;":
            continue
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            sections.setdefault(current, [])
            continue
        if current is None or "=" not in line:
            raise UnitSyntaxError(f"not an assignment in a section: {line!r}")
        key, _, value = line.partition("=")
        sections[current].append((key.strip(), value.strip()))
    return sections


def values(text: str, section: str, key: str) -> list[str]:
    return [v for k, v in parse_unit(text).get(section, []) if k == key]


def _specifiers(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "%":
            if text[i + 1:i + 2] != "%":
                raise UnitSyntaxError(f"unescaped specifier in {text!r}")
            out.append("%")
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _words(value: str) -> list[str]:
    words, i, n = [], 0, len(value)
    while True:
        while i < n and value[i] in " \t":
            i += 1
        if i >= n:
            return words
        word, quote = [], None
        while i < n:
            c = value[i]
            if quote is None and c in " \t":
                break
            if c == "\\":
                if i + 1 >= n or value[i + 1] not in _ESCAPES:
                    raise UnitSyntaxError(f"unsupported escape in {value!r}")
                word.append(_ESCAPES[value[i + 1]])
                i += 2
                continue
            if quote is None and c in "\"'":
                quote = c
            elif quote == c:
                quote = None
            else:
                word.append(c)
            i += 1
        if quote is not None:
            raise UnitSyntaxError(f"unterminated quote in {value!r}")
        words.append("".join(word))


def _dollars(word: str) -> str:
    out, i = [], 0
    while i < len(word):
        if word[i] == "$":
            if word[i + 1:i + 2] != "$":
                raise UnitSyntaxError(f"unescaped $ (variable expansion) in {word!r}")
            out.append("$")
            i += 2
            continue
        out.append(word[i])
        i += 1
    return "".join(out)


def exec_argv(value: str) -> list[str]:
    """The argv an Exec*= value runs (prefixes like '-' dropped from the program)."""
    words = [_dollars(w) for w in _words(_specifiers(value))]
    if words:
        words[0] = words[0].lstrip("-@+!:")
    return words


def environment(text: str) -> dict[str, str]:
    """Every Environment= assignment of a unit, as the process would see it."""
    env: dict[str, str] = {}
    for value in values(text, "Service", "Environment"):
        for word in _words(value):
            name, sep, val = _specifiers(word).partition("=")
            if not sep:
                raise UnitSyntaxError(f"not NAME=value: {word!r}")
            env[name] = val
    return env
