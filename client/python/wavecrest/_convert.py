"""From protobuf messages to the typed answers of wavecrest.results, and their enums."""
from __future__ import annotations

import enum
import keyword
import re
from typing import Any, Dict, Type

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message


class ProtoEnum(int, enum.Enum):
    """A protobuf enum value that prints by its name ("PREDICTED", not 3). It is still the number
    (it compares equal to model_pb2.SOURCE_PREDICTED and indexes like an int) and also compares
    equal to its name, short or full ("PREDICTED", "SOURCE_PREDICTED")."""

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __format__(self, spec: str) -> str:
        return format(self.name, spec)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other in (self.name, self.full_name)
        return int.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = int.__hash__

    @property
    def full_name(self) -> str:
        """The .proto's name of the value ("SOURCE_PREDICTED"): the enum's name in capitals, as
        scripts/gen-python-results.py strips it."""
        prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", type(self).__name__).upper() + "_"
        return self.name if self.name.startswith(prefix) else prefix + self.name


def _enum(cls: Type[ProtoEnum], value: int) -> Any:
    try:
        return cls(value)
    except ValueError:  # a newer server's value this client does not know: keep the number
        return value


def from_message(message: Message, cls: Any = None) -> Any:
    """The typed answer (a wavecrest.results dataclass, or `cls`, a subclass of it) for a
    protobuf message of the Advisor."""
    from wavecrest import results  # generated; imports this module

    cls = cls or results.MESSAGES[message.DESCRIPTOR.full_name]
    values: Dict[str, Any] = {}
    for f in message.DESCRIPTOR.fields:
        name = f.name + "_" if keyword.iskeyword(f.name) else f.name  # GemmReport.pass_
        value = getattr(message, f.name)
        if f.label == FieldDescriptor.LABEL_REPEATED:
            if f.message_type is not None:
                values[name] = [from_message(v) for v in value]
            elif f.enum_type is not None:
                values[name] = [_enum(results.ENUMS[f.enum_type.full_name], v) for v in value]
            else:
                values[name] = list(value)
        elif f.message_type is not None:
            optional = f"{message.DESCRIPTOR.name}.{f.name}" in results.OPTIONAL
            values[name] = None if optional and not message.HasField(f.name) else from_message(value)
        elif f.has_presence and f.containing_oneof is not None and not message.HasField(f.name):
            values[name] = None
        elif f.enum_type is not None:
            values[name] = _enum(results.ENUMS[f.enum_type.full_name], value)
        else:
            values[name] = value
    result = cls(**values)
    # The message itself, for to_json() and whatever needs the protobuf (not a field).
    object.__setattr__(result, "_message", message)
    return result


def message_of(result: Any) -> Message:
    """The protobuf message a typed answer was made from."""
    message: Message = getattr(result, "_message")
    return message
