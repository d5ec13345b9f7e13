#!/usr/bin/env python3
"""Generates client/python/wavecrest/results.py: the Advisor's answers as typed Python objects.

Every message an answer holds (AnalyzeResponse, RecommendResponse, SweepResponse, GemmTiming,
ListDevicesResponse and what they contain) becomes a frozen dataclass with the .proto's field
names, types and comments; every enum an `Enum` whose members print by name ("PREDICTED", not 3)
and still compare equal to the protobuf numbers and to their names. The conversion from the
protobuf messages is generic (wavecrest/_convert.py); this file is only the declarations, made
from the committed stubs' descriptors and the .proto comments, so that they cannot drift apart:
the CTest python_stubs_current regenerates it and fails when it differs.

    scripts/gen-python-results.py [OUT_FILE]     (default client/python/wavecrest/results.py)
"""
from __future__ import annotations

import keyword
import re
import sys
from pathlib import Path
from typing import Dict, List, Set

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "client" / "python"))

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor  # noqa: E402

from wavecrest.v1 import advisor_pb2  # noqa: E402

# What the client's calls return, and so what is generated (with everything they hold).
ROOTS = ["AnalyzeResponse", "RecommendResponse", "SweepResponse", "GemmTiming",
         "ListDevicesResponse", "LayerTiming"]

SCALARS = {
    FieldDescriptor.TYPE_DOUBLE: "float", FieldDescriptor.TYPE_FLOAT: "float",
    FieldDescriptor.TYPE_INT64: "int", FieldDescriptor.TYPE_UINT64: "int",
    FieldDescriptor.TYPE_INT32: "int", FieldDescriptor.TYPE_UINT32: "int",
    FieldDescriptor.TYPE_SINT32: "int", FieldDescriptor.TYPE_SINT64: "int",
    FieldDescriptor.TYPE_FIXED32: "int", FieldDescriptor.TYPE_FIXED64: "int",
    FieldDescriptor.TYPE_BOOL: "bool", FieldDescriptor.TYPE_STRING: "str",
    FieldDescriptor.TYPE_BYTES: "bytes",
}
# Message fields whose absence means something (no run, no measurement, a GEMM sweep): None when
# unset. Every other message field is always an object, empty where the answer leaves it unset,
# as protobuf reads it.
OPTIONAL = {"AnalyzeResponse.step", "AnalyzeResponse.tensor_parallel_run",
            "AnalyzeResponse.measured_step", "SweepResponse.assumed", "RecommendResponse.progress",
            "SweepResponse.progress", "RecommendResponse.assumed"}
DEFAULTS = {"float": "0.0", "int": "0", "bool": "False", "str": '""', "bytes": 'b""'}


def proto_comments() -> Dict[str, str]:
    """The comment above each message, enum and field in the .proto files, keyed by
    "Message", "Message.field" or "Enum", as one line of words."""
    out: Dict[str, str] = {}
    for name in ("model.proto", "advisor.proto"):
        lines = (HERE / "proto" / "wavecrest" / "v1" / name).read_text().splitlines()
        scope: List[str] = []
        pending: List[str] = []
        for raw in lines:
            line = raw.strip()
            if line.startswith("//"):
                pending.append(line[2:].strip())
                continue
            m = re.match(r"(message|enum)\s+(\w+)\s*\{", line)
            if m:
                scope.append(m.group(2))
                if pending:
                    out[m.group(2)] = " ".join(pending)
            else:
                f = re.match(r"(?:repeated\s+|optional\s+)?[\w.]+\s+(\w+)\s*=\s*\d+;", line)
                if f and scope and pending:
                    out[f"{scope[-1]}.{f.group(1)}"] = " ".join(pending)
            if line.startswith("}") and scope:
                scope.pop()
            pending = []
    return out


def reachable() -> (List[Descriptor], List[EnumDescriptor]):
    messages: List[Descriptor] = []
    enums: List[EnumDescriptor] = []
    seen: Set[str] = set()

    def visit(d: Descriptor) -> None:
        if d.full_name in seen:
            return
        seen.add(d.full_name)
        for f in d.fields:
            if f.message_type is not None:
                visit(f.message_type)
            if f.enum_type is not None and f.enum_type.full_name not in seen:
                seen.add(f.enum_type.full_name)
                enums.append(f.enum_type)
        messages.append(d)  # after what it holds: every annotation names a class defined above

    for root in ROOTS:
        visit(advisor_pb2.DESCRIPTOR.message_types_by_name[root])
    return messages, sorted(enums, key=lambda e: e.name)


def member_prefix(e: EnumDescriptor) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", e.name).upper() + "_"


def python_name(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) else name


def wrap(text: str, indent: str) -> List[str]:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(indent) + 2 + len(line) + 1 + len(w) > 99:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    if line:
        lines.append(line)
    return [f"{indent}# {x}" for x in lines]


def docstring(text: str) -> List[str]:
    """A class's docstring: the .proto comment, wrapped."""
    quote = '"' * 3
    lines = [x[len("    # "):] for x in wrap(text.replace(quote, "'''"), "    ")]
    lines[-1] += quote
    return ["    r" + quote + lines[0]] + ["    " + x for x in lines[1:]]


def field_type(f: FieldDescriptor, owner: str) -> (str, str):
    """The annotation and the default of a field."""
    if f.message_type is not None:
        base = f.message_type.name
    elif f.enum_type is not None:
        base = f.enum_type.name
    else:
        base = SCALARS[f.type]
    if f.label == FieldDescriptor.LABEL_REPEATED:
        return f"List[{base}]", "field(default_factory=list)"
    if f.message_type is not None and f"{owner}.{f.name}" not in OPTIONAL:
        return base, f"field(default_factory={base})"
    if f.message_type is not None or f.has_presence and f.containing_oneof is not None:
        return f"Optional[{base}]", "None"
    if f.enum_type is not None:
        return base, f"{base}.{f.enum_type.values[0].name[len(member_prefix(f.enum_type)):]}"
    return base, DEFAULTS[base]


def generate() -> str:
    comments = proto_comments()
    messages, enums = reachable()
    out = [
        '"""The Advisor\'s answers as typed Python objects (generated by scripts/gen-python-results.py',
        'from proto/wavecrest/v1; do not edit).',
        "",
        "Each class is a frozen dataclass with the .proto message's fields: lists for repeated fields,",
        "enums as members that print by name, message fields as objects (None only where absence",
        "means something: an analysis without a run has step None, a GEMM sweep assumed None).",
        '"""',
        "from __future__ import annotations",
        "",
        "from dataclasses import dataclass, field",
        "from typing import Dict, List, Optional, Type",
        "",
        "from wavecrest._convert import ProtoEnum",
        "",
    ]
    for e in enums:
        out.append("")
        out.append(f"class {e.name}(ProtoEnum):")
        out.extend(docstring(comments.get(e.name, e.name)))
        prefix = member_prefix(e)
        for v in e.values:
            name = v.name[len(prefix):] if v.name.startswith(prefix) else v.name
            if name[0].isdigit():
                name = "_" + name
            out.append(f"    {name} = {v.number}")
        out.append("")
    for d in messages:
        out.append("")
        out.append("@dataclass(frozen=True)")
        out.append(f"class {d.name}:")
        out.extend(docstring(comments.get(d.name, d.name)))
        for f in d.fields:
            note = comments.get(f"{d.name}.{f.name}")
            if note:
                out.extend(wrap(note, "    "))
            annotation, default = field_type(f, d.name)
            out.append(f"    {python_name(f.name)}: {annotation} = {default}")
        out.append("")
    out.append("")
    out.append("# The message fields that are None when unset (the others are always objects).")
    out.append("OPTIONAL = {")
    out.extend(f'    "{x}",' for x in sorted(OPTIONAL))
    out.append("}")
    out.append("")
    out.append("# The classes by the protobuf message or enum they stand for (wavecrest/_convert.py).")
    out.append("MESSAGES: Dict[str, type] = {")
    for d in messages:
        out.append(f'    "{d.full_name}": {d.name},')
    out.append("}")
    out.append("ENUMS: Dict[str, Type[ProtoEnum]] = {")
    for e in enums:
        out.append(f'    "{e.full_name}": {e.name},')
    out.append("}")
    return "\n".join(out) + "\n"


def main() -> None:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "client/python/wavecrest/results.py"
    target.write_text(generate())
    print(f"gen-python-results: {target}")


if __name__ == "__main__":
    main()
