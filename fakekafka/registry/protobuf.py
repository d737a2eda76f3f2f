"""Protobuf schemas as `.proto` text, compiled by protoc itself (the one `grpcio-tools` ships) into the
FileDescriptorProto the compatibility rules read.

A registered `.proto` file is written to a scratch folder and compiled by protoc (grpcio-tools), its
imports resolved from the references' descriptors (given to protoc as a descriptor set under each reference's
name), Google's well-known types and, when confluent-kafka is installed, Confluent's own `confluent/*.proto`.
protoc's own error lines become the 42201 message. A compiled file is kept by its text and its imports'
descriptors, so a schema is compiled once per process: protoc runs in this process (grpcio-tools' extension, a
few ms; a refused file is compiled again in a child process for protoc's words, which in-process go to fd 2), on
the HTTP thread first (`SchemaRegistryServer._compile_here`), never on the cluster's loop.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
from typing import Any

from fakekafka.registry.errors import RegistryError

__all__ = ["MAIN_FILE", "compile_proto"]

MAIN_FILE = "schema.proto"
"""The name a registered `.proto` text is compiled under (imports name the references, never this file)."""

_CACHE: dict[tuple[str, tuple[tuple[str, bytes], ...]], bytes | RegistryError] = {}
"""Compiled files (with protoc's source spans), and refusals (so an invalid file is not compiled twice), by text and
imports."""
_CACHE_LOCK = threading.Lock()
_CACHE_LIMIT = 1024
_TIMEOUT_S = 60


def _confluent_files() -> list[Any]:
    """Confluent's `confluent/meta.proto` and decimal types as confluent-kafka ships them (when installed)."""
    if importlib.util.find_spec("confluent_kafka") is None:
        return []
    out = []
    for module in ("confluent_kafka.schema_registry.confluent.meta_pb2",
                   "confluent_kafka.schema_registry.confluent.types.decimal_pb2"):
        try:
            out.append(importlib.import_module(module).DESCRIPTOR)
        except ImportError:  # an older confluent-kafka without it
            continue
    return out


def compile_proto(text: str, imports: dict[str, Any], source_info: bool = False) -> Any:
    """The FileDescriptorProto of `.proto` text `text` whose imports `imports` ({import path: FileDescriptorProto})
    resolves; RegistryError 42201 with protoc's words when it does not compile. `source_info` keeps protoc's source
    spans (what the canonical printer reads the names as written from): protoc runs once either way."""
    from google.protobuf import descriptor_pb2

    key = (text, tuple(sorted((name, fd.SerializeToString(deterministic=True)) for name, fd in imports.items())))
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
    if cached is None:
        try:
            cached = _run_protoc(text, imports)
        except RegistryError as e:
            cached = e
        with _CACHE_LOCK:
            if len(_CACHE) >= _CACHE_LIMIT:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = cached
    if isinstance(cached, RegistryError):
        raise RegistryError(cached.status, cached.error_code, cached.message)
    out = descriptor_pb2.FileDescriptorProto()
    out.ParseFromString(cached)
    if not source_info:
        out.ClearField("source_code_info")
    return out


_PROTOC_LOCK = threading.Lock()


def _protoc_here(args: list[str], scratch: str) -> int:
    """protoc in this process (grpcio-tools' extension, a few ms); `.` in `args` is the scratch folder (this process's
    working directory is not changed: other threads use it)."""
    from grpc_tools import _protoc_compiler

    args = [f"--proto_path={scratch}" if a == "--proto_path=." else a for a in args]
    with _PROTOC_LOCK:
        return int(_protoc_compiler.run_main([b"protoc", *(a.encode() for a in args)]))


def _run_protoc(text: str, imports: dict[str, Any]) -> bytes:
    from google.protobuf import descriptor_pb2

    if importlib.util.find_spec("grpc_tools") is None:
        raise RegistryError.invalid_schema(
            "Invalid schema: Protobuf .proto text is compiled with protoc from grpcio-tools, which is not installed "
            "(pip install 'fakekafka[schema-registry]'); a serialized FileDescriptorProto in base64 needs no compiler")
    given = descriptor_pb2.FileDescriptorSet()
    for module in _confluent_files():
        if module.name not in imports:
            fd = given.file.add()
            fd.ParseFromString(module.serialized_pb)
    for name, fd in imports.items():
        copy = given.file.add()
        copy.CopyFrom(fd)
        copy.name = name
    well_known = os.path.join(os.path.dirname(importlib.util.find_spec("grpc_tools").origin or ""), "_proto")
    with tempfile.TemporaryDirectory(prefix="fakekafka-proto-") as scratch:
        with open(os.path.join(scratch, MAIN_FILE), "w", encoding="utf-8") as f:
            f.write(text)
        out_path = os.path.join(scratch, "out.pb")
        args = [sys.executable, "-m", "grpc_tools.protoc", "--proto_path=.", f"--proto_path={well_known}",
                f"--descriptor_set_out={out_path}", MAIN_FILE]
        args.insert(-1, "--include_source_info")
        if given.file:
            set_path = os.path.join(scratch, "imports.pb")
            with open(set_path, "wb") as f:
                f.write(given.SerializeToString())
            # protoc reads imports from --descriptor_set_in before the paths; the main file comes from the folder
            args.insert(3, f"--descriptor_set_in={set_path}")
        if _protoc_here(args[3:], scratch) != 0 or not os.path.exists(out_path):
            # refused: compiled again in a child process, for protoc's words (in this process they go to fd 2)
            try:
                done = subprocess.run(args, capture_output=True, text=True, timeout=_TIMEOUT_S, cwd=scratch,
                                      check=False)
            except subprocess.TimeoutExpired:
                raise RegistryError.invalid_schema(f"Invalid schema: protoc did not finish in {_TIMEOUT_S} s") from None
        else:
            done = None
        if done is not None and (done.returncode != 0 or not os.path.exists(out_path)):
            words = "; ".join(line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip())
            raise RegistryError.invalid_schema(f"Invalid schema {text!r}, details: {words or 'protoc failed'}")
        result = descriptor_pb2.FileDescriptorSet()
        with open(out_path, "rb") as f:
            result.ParseFromString(f.read())
    main = next((fd for fd in result.file if fd.name == MAIN_FILE), None)
    if main is None:
        raise RegistryError.invalid_schema("Invalid schema: protoc compiled no file")
    return main.SerializeToString(deterministic=True)
