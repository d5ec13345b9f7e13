"""wavecrest: hardware-efficient transformer shapes, from Python.

    from wavecrest import AdvisorClient
    with AdvisorClient("127.0.0.1:50051") as client:
        report = client.analyze("path/to/config.json", "h100-sxm", seq_length=4096)
        print(report.assumed.summary, report.step_time_s, report.mfu, report.provenance.source)
        best = client.recommend("path/to/config.json", "h100-sxm", mode="predicted", top=3,
                                seq_length=4096)
        print(best.verdict, best.verdict_reason, best.best)

Answers are typed (wavecrest.results: frozen dataclasses with the .proto's fields; enums print
by name, PREDICTED rather than 3, and equal both their names and the protobuf numbers). Needs
grpcio and protobuf (Debian: python3-grpcio, python3-protobuf). Every figure carries its
provenance: PREDICTED (with its error band), MEASURED or CACHED.
"""
from wavecrest.client import (AdvisorClient, ModelLike, Recommendation, WavecrestError, enum_value,
                              load_model, to_json)
from wavecrest import results
from wavecrest._convert import ProtoEnum, from_message, message_of
from wavecrest.v1 import advisor_pb2, model_pb2

__version__ = "0.1.0"

__all__ = ["AdvisorClient", "ModelLike", "ProtoEnum", "Recommendation", "WavecrestError",
           "advisor_pb2", "enum_value", "from_message", "load_model", "message_of", "model_pb2",
           "results", "to_json", "__version__"]
