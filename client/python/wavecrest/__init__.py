"""wavecrest: hardware-efficient transformer shapes, from Python.

    from wavecrest import AdvisorClient
    with AdvisorClient("127.0.0.1:50051") as client:
        report = client.analyze("path/to/config.json", "h100-sxm", seq_length=4096)
        print(report.step_time_s, report.mfu, [r.id for r in report.rules])
        best = client.recommend("path/to/config.json", "h100-sxm", mode="predicted", top=3,
                                seq_length=4096)
        print(best.verdict, best.verdict_reason, best.best)

Needs grpcio and protobuf (Debian: python3-grpcio, python3-protobuf). Every figure carries its
provenance: PREDICTED (with its error band), MEASURED or CACHED.
"""
from wavecrest.client import (AdvisorClient, ModelLike, Recommendation, WavecrestError, enum_value,
                              load_model, to_json)
from wavecrest.v1 import advisor_pb2, model_pb2

__version__ = "0.1.0"

__all__ = ["AdvisorClient", "ModelLike", "Recommendation", "WavecrestError", "advisor_pb2",
           "enum_value", "load_model", "model_pb2", "to_json", "__version__"]
