"""Decoding the google.rpc error details the server attaches to a failed call.

The messages (google.rpc.Status, BadRequest, RetryInfo) are built in a private descriptor pool,
so this package never registers google.rpc types in protobuf's default pool, where another
library (googleapis-common-protos) may register them too.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, duration_pb2, message_factory

_POOL = descriptor_pool.DescriptorPool()
_POOL.AddSerializedFile(any_pb2.DESCRIPTOR.serialized_pb)
_POOL.AddSerializedFile(duration_pb2.DESCRIPTOR.serialized_pb)


def _file() -> descriptor_pb2.FileDescriptorProto:
    f = descriptor_pb2.FileDescriptorProto(
        name="wavecrest_private/google_rpc.proto", package="google.rpc", syntax="proto3",
        dependency=["google/protobuf/any.proto", "google/protobuf/duration.proto"])
    label_opt = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    label_rep = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
    t = descriptor_pb2.FieldDescriptorProto
    status = f.message_type.add(name="Status")
    status.field.add(name="code", number=1, type=t.TYPE_INT32, label=label_opt)
    status.field.add(name="message", number=2, type=t.TYPE_STRING, label=label_opt)
    status.field.add(name="details", number=3, type=t.TYPE_MESSAGE, label=label_rep,
                     type_name=".google.protobuf.Any")
    bad = f.message_type.add(name="BadRequest")
    violation = bad.nested_type.add(name="FieldViolation")
    violation.field.add(name="field", number=1, type=t.TYPE_STRING, label=label_opt)
    violation.field.add(name="description", number=2, type=t.TYPE_STRING, label=label_opt)
    bad.field.add(name="field_violations", number=1, type=t.TYPE_MESSAGE, label=label_rep,
                  type_name=".google.rpc.BadRequest.FieldViolation")
    retry = f.message_type.add(name="RetryInfo")
    retry.field.add(name="retry_delay", number=1, type=t.TYPE_MESSAGE, label=label_opt,
                    type_name=".google.protobuf.Duration")
    return f


_POOL.Add(_file())


def _cls(name: str) -> Any:
    descriptor = _POOL.FindMessageTypeByName(name)
    get_class = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.22
    if get_class is not None:
        return get_class(descriptor)
    return message_factory.MessageFactory(_POOL).GetPrototype(descriptor)


_Status = _cls("google.rpc.Status")
_BadRequest = _cls("google.rpc.BadRequest")
_RetryInfo = _cls("google.rpc.RetryInfo")


def decode_details(status_bin: bytes) -> Tuple[List[Tuple[str, str]], Optional[float]]:
    """(field violations, retry delay in seconds) of a grpc-status-details-bin trailer."""
    violations: List[Tuple[str, str]] = []
    retry: Optional[float] = None
    status = _Status.FromString(status_bin)
    for detail in status.details:
        kind = detail.type_url.rsplit("/", 1)[-1]
        if kind == "google.rpc.BadRequest":
            bad = _BadRequest.FromString(detail.value)
            violations += [(v.field, v.description) for v in bad.field_violations]
        elif kind == "google.rpc.RetryInfo":
            info = _RetryInfo.FromString(detail.value)
            retry = info.retry_delay.seconds + info.retry_delay.nanos / 1e9
    return violations, retry
