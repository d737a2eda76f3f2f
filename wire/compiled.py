"""A `Message`'s parse and build as Python source specialised for its fields, compiled on first use.

The generic `Message._parse_generic`/`_build_generic` walk the field list, format a path string per
field and go through construct's checks for every integer. What is written here for each message
instead: runs of fixed-size fields (integers, booleans) read or written with one precompiled
`struct`, other fields called directly, the path formatted only when an error is raised. Results,
bytes and errors (type, message, field path) are the generic versions'; `tests/unit/wire` compares them.

Error paths: every field gets its parent's path unchanged, and a message that sees a construct error
inserts its own field's name right after that path on the way up, so the path reads
"FetchRequestV16 -> topics -> partitions -> fetch_offset" as before.
"""

from __future__ import annotations

import keyword
import operator
import struct
from collections.abc import Callable
from typing import Any

from construct import ConstructError, Container, FormatField, StreamError

from fakekafka.wire.primitives import STRUCT_DEFAULT, UNKNOWN_TAGS, Bool, Message

__all__ = ["compile_message"]

_MISSING = object()


def _fixed_format(subcon: Any) -> str | None:
    """The struct format of a fixed-size big-endian field, or None for anything else."""

    if subcon is Bool:
        return "?"  # parses any non-zero byte as True and builds from truthiness, as _Bool does
    if isinstance(subcon, FormatField) and subcon.fmtstr[:1] == ">" and len(subcon.fmtstr) == 2:
        return subcon.fmtstr[1]
    return None


def annotate(e: ConstructError, path: str, name: str) -> None:
    """Puts `name` into the error's path right after `path` (this message's own place)."""
    p = e.path
    if isinstance(p, str) and p.startswith(path):
        e.path = f"{path} -> {name}{p[len(path):]}"
    elif not p:
        e.path = f"{path} -> {name}"


def _runs(msg: Message) -> list[tuple[int, int, str | None]]:
    """Consecutive fields as (first index, end index, struct format or None for a single other field)."""
    runs: list[tuple[int, int, str | None]] = []
    for i, f in enumerate(msg.fields):
        fmt = _fixed_format(f.subcon)
        if fmt is not None and runs and runs[-1][2] is not None and runs[-1][1] == i:
            start, _, prev = runs[-1]
            runs[-1] = (start, i + 1, prev + fmt)
        else:
            runs.append((i, i + 1, fmt))
    return runs


def _default_expr(msg: Message, i: int, ns: dict[str, Any]) -> str:
    """Source for field i's default: a constant when it is immutable, else a call as Field.default_value."""

    d = msg.fields[i].default
    if d is None or isinstance(d, (bool, int, float, str, bytes)):
        ns[f"_d{i}"] = d
        return f"_d{i}"
    if d is STRUCT_DEFAULT or callable(d):
        ns[f"_dv{i}"] = msg.fields[i].default_value
        return f"_dv{i}()"
    ns[f"_d{i}"] = d  # e.g. a uuid.UUID: immutable
    return f"_d{i}"


def container_class(names: list[str]) -> type[Container]:
    """A `Container` whose fields `names` are read as attributes without construct's `__getattr__` (which runs
    only after Python's own lookup has failed and raised: about half a microsecond per field read, a tenth of a
    steady heartbeat's time). Names a Container already answers (`items`, `values`...) stay its methods; a
    copy or pickle is a plain Container."""
    attrs: dict[str, Any] = {"__slots__": (), "__module__": Container.__module__,
                             "__reduce__": lambda self: (Container, (list(self.items()),))}
    for name in names:
        if name.isidentifier() and not keyword.iskeyword(name) and not hasattr(Container, name):
            attrs[name] = property(operator.itemgetter(name))
    cls = type("Container", (Container,), attrs)
    cls.__slots__ = Container.__slots__  # what Container's __setattr__ reads: its recursion lock stays in its slot
    return cls


def compile_message(msg: Message) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(parse, build) with the signatures of Construct._parse and Construct._build."""
    fields = msg.fields
    ns: dict[str, Any] = {
        "Container": container_class(msg.field_names()), "ConstructError": ConstructError, "StreamError": StreamError,
        "struct_error": struct.error, "annotate": annotate, "_M": _MISSING, "_UNKNOWN_TAGS": UNKNOWN_TAGS,
        "_names": tuple(f.name for f in fields), "_subs": tuple(f.subcon for f in fields),
        "_parse_tags": msg._parse_tags, "_build_tags": msg._build_tags,
    }
    for i, f in enumerate(fields):
        ns[f"_n{i}"] = f.name
        ns[f"_s{i}"] = f.subcon  # its _parse/_build looked up per call: a nested Message swaps in its own on first use
    runs = _runs(msg)

    p = ["def parse(stream, context, path):", "    read = stream.read", "    _f = 0", "    try:", "        pass"]
    for k, (start, end, fmt) in enumerate(runs):
        p.append(f"        _f = {start}")
        if fmt is None:
            p.append(f"        v{start} = _s{start}._parse(stream, context, path)")
            continue
        st = struct.Struct(">" + fmt)
        ns[f"_S{k}"] = st
        targets = "".join(f"v{i}, " for i in range(start, end))
        p += [f"        data = read({st.size})",
              f"        if len(data) != {st.size}:",
              # short: let the fields themselves fail, so the error (field, message, offset) is the generic one
              "            stream.seek(-len(data), 1)",
              f"            for _f in range({start}, {end}):",
              "                _subs[_f]._parse(stream, context, path)",
              "            raise StreamError('stream ended inside fixed-size fields', path=path)",
              f"        {targets}= _S{k}.unpack(data)"]
    p += ["    except ConstructError as e:",
          "        annotate(e, path, _names[_f])",
          "        raise",
          "    obj = Container()"]
    p += [f"    obj[_n{i}] = v{i}" for i in range(len(fields))]
    if msg.flexible:
        # nearly always an empty tagged-field section: one zero byte
        p += ["    t = read(1)", "    if t == b'\\x00':"]
        for j, t in enumerate(msg.tagged.values()):
            ns[f"_tn{j}"] = t.name
            ns[f"_tv{j}"] = t.default_value
            p.append(f"        obj[_tn{j}] = _tv{j}()")
        p += ["        pass", "    else:", "        stream.seek(-len(t), 1)", "        _parse_tags(stream, path, obj)"]
    p.append("    return obj")

    b = ["def build(obj, stream, context, path):", "    get = obj.get", "    write = stream.write", "    _f = 0",
         "    try:", "        pass"]
    for k, (start, end, fmt) in enumerate(runs):
        for i in range(start, end):
            b += [f"        v{i} = get(_n{i}, _M)",
                  f"        if v{i} is _M:",
                  f"            v{i} = {_default_expr(msg, i, ns)}"]
        b.append(f"        _f = {start}")
        if fmt is None:
            b.append(f"        _s{start}._build(v{start}, stream, context, path)")
            continue
        values = ", ".join(f"v{i}" for i in range(start, end))
        b += ["        try:",
              f"            data = _S{k}.pack({values})",
              "        except struct_error:",
              # let the fields themselves fail, so the error is the generic one, naming the right field
              f"            for _f, _v in zip(range({start}, {end}), ({values},)):",
              "                _subs[_f]._build(_v, stream, context, path)",
              "            raise",
              "        write(data)"]
    b += ["    except ConstructError as e:",
          "        annotate(e, path, _names[_f])",
          "        raise"]
    if msg.flexible:
        if msg.tagged:
            b.append("    _build_tags(obj, stream, path)")
        else:
            b += ["    if get(_UNKNOWN_TAGS):", "        _build_tags(obj, stream, path)", "    else:",
                  "        write(b'\\x00')"]
    b.append("    return obj")

    source = "\n".join(p) + "\n\n\n" + "\n".join(b) + "\n"
    exec(compile(source, f"<wire.compiled {', '.join(ns['_names'][:3])}...>", "exec"), ns)  # noqa: S102
    return ns["parse"], ns["build"]


Message.compiler = compile_message
