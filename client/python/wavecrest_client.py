"""A small Python client for the wavecrest Advisor (gRPC).

Needs Debian's python3-grpcio and python3-protobuf, and the stubs CMake generates into
build/python (put that directory and this one on PYTHONPATH).

    from wavecrest_client import WavecrestClient
    client = WavecrestClient("127.0.0.1:50051")
    report = client.analyze(WavecrestClient.load_model("examples/models/llama-2-7b.json"), "h100-sxm")
    print(report.step_time_s, [r.message for r in report.rules])
"""

import json
import os

import grpc
from google.protobuf import json_format

from wavecrest.v1 import advisor_pb2, advisor_pb2_grpc, model_pb2
from google.rpc import error_details_pb2, status_pb2


class WavecrestError(Exception):
    """A failed call: gRPC code, message, field violations and retry delay (seconds)."""

    def __init__(self, code, message, violations=None, retry_after_s=None):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.violations = violations or []  # [(field, description)]
        self.retry_after_s = retry_after_s

    @property
    def retryable(self):
        return self.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)


def _error(rpc_error):
    violations, retry = [], None
    for key, value in rpc_error.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations += [(v.field, v.description) for v in bad.field_violations]
            elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                info = error_details_pb2.RetryInfo()
                detail.Unpack(info)
                retry = info.retry_delay.seconds + info.retry_delay.nanos / 1e9
    return WavecrestError(rpc_error.code(), rpc_error.details(), violations, retry)


class _TokenInterceptor(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds the bearer token to every call."""

    def __init__(self, token):
        self._metadata = ("authorization", f"Bearer {token}")

    def _with_token(self, details):
        metadata = list(details.metadata or []) + [self._metadata]
        return details._replace(metadata=metadata)

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._with_token(details), request)


class WavecrestClient:
    """Advisor calls with a deadline each; failures raise WavecrestError."""

    def __init__(self, address, timeout_s=60.0, tls_ca=None, tls_cert=None, tls_key=None,
                 token=None):
        """TLS when `tls_ca` (the server's CA, a PEM file) is given; mutual TLS with `tls_cert` and
        `tls_key`. `token` (default: $WAVECREST_TOKEN) goes as "authorization: Bearer <token>"."""
        self.timeout_s = timeout_s
        options = [("grpc.keepalive_time_ms", 30000), ("grpc.keepalive_timeout_ms", 10000)]
        if tls_ca:
            def read(path):
                with open(path, "rb") as f:
                    return f.read()
            credentials = grpc.ssl_channel_credentials(
                root_certificates=read(tls_ca),
                private_key=read(tls_key) if tls_key else None,
                certificate_chain=read(tls_cert) if tls_cert else None)
            self.channel = grpc.secure_channel(address, credentials, options=options)
        else:
            self.channel = grpc.insecure_channel(address, options=options)
        token = token or os.environ.get("WAVECREST_TOKEN")
        if token:
            self.channel = grpc.intercept_channel(self.channel, _TokenInterceptor(token))
        self.stub = advisor_pb2_grpc.AdvisorStub(self.channel)

    @staticmethod
    def load_model(path):
        """A wavecrest spec file (the JSON mapping of wavecrest.v1.ModelSpec)."""
        with open(path) as f:
            return json_format.Parse(f.read(), model_pb2.ModelSpec())

    def analyze(self, model, gpu):
        try:
            return self.stub.Analyze(advisor_pb2.AnalyzeRequest(model=model, gpu=gpu),
                                     timeout=self.timeout_s)
        except grpc.RpcError as e:
            raise _error(e) from None

    def list_devices(self):
        try:
            return self.stub.ListDevices(advisor_pb2.ListDevicesRequest(), timeout=self.timeout_s)
        except grpc.RpcError as e:
            raise _error(e) from None

    def time_gemms(self, gpu, gemms=None, model=None, dtype="DTYPE_BF16", layout="LAYOUT_TN",
                   mode="MODE_AUTO", on_progress=None):
        """Times [(m, n, k) or (m, n, k, batch)] or every GEMM of `model`; returns GemmTimings."""
        request = advisor_pb2.TimeGemmsRequest(gpu=gpu, dtype=dtype, layout=layout, mode=mode)
        for shape in gemms or []:
            m, n, k, *batch = shape
            request.gemms.add(m=m, n=n, k=k, batch=batch[0] if batch else 1)
        if model is not None:
            request.model.CopyFrom(model)
        results = []
        try:
            for message in self.stub.TimeGemms(request, timeout=self.timeout_s):
                if message.HasField("timing"):
                    results.append(message.timing)
                elif on_progress is not None:
                    on_progress(message.progress)
        except grpc.RpcError as e:
            raise _error(e) from None
        return sorted(results, key=lambda t: t.index)

    def recommend(self, model, gpu, mode="MODE_AUTO", on_progress=None, **constraints):
        """Ranked candidates (the final RecommendResponse). `constraints` are RecommendRequest
        fields, e.g. param_tolerance=0.02, top=5, vary=["KNOB_HEADS"]."""
        request = advisor_pb2.RecommendRequest(model=model, gpu=gpu, mode=mode, **constraints)
        final = None
        try:
            for message in self.stub.Recommend(request, timeout=self.timeout_s):
                if message.done:
                    final = message
                elif on_progress is not None:
                    on_progress(message.progress)
        except grpc.RpcError as e:
            raise _error(e) from None
        return final

    def health(self, service=""):
        """grpc.health.v1 Check: "SERVING", "NOT_SERVING", ... ("" = the whole server).

        The messages are {string service = 1} and {enum status = 1}; they are encoded here
        because the generated module would collide with grpcio's own `grpc` package."""
        name = service.encode()
        check = self.channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda s: (b"\x0a" + bytes([len(s)]) + s) if s else b"",
            response_deserializer=lambda b: b[1] if len(b) >= 2 and b[0] == 0x08 else 0)
        try:
            status = check(name[:127], timeout=self.timeout_s)
        except grpc.RpcError as e:
            raise _error(e) from None
        return {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}.get(status, "UNKNOWN")

    @staticmethod
    def to_json(message):
        return json.loads(json_format.MessageToJson(message, preserving_proto_field_name=True))
