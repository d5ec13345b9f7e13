"""AdvisorClient: the wavecrest Advisor over gRPC, for training launchers and notebooks."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple,
                    TypeVar, Union)

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from wavecrest import _status, results
from wavecrest._convert import from_message, message_of
from wavecrest.v1 import advisor_pb2, advisor_pb2_grpc, model_pb2

ModelSpec = model_pb2.ModelSpec
Progress = advisor_pb2.Progress
# A model: a ModelSpec, its JSON mapping as a dict, or the path of a wavecrest spec or of a
# Hugging Face config.json (told apart by content; an HF config is imported by the server).
ModelLike = Union[model_pb2.ModelSpec, Mapping[str, Any], str, "os.PathLike[str]"]
ProgressCallback = Callable[[advisor_pb2.Progress], None]

_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)


class WavecrestError(Exception):
    """A failed call: the gRPC code, the message, field violations and the server's retry delay."""

    def __init__(self, code: grpc.StatusCode, message: str,
                 violations: Optional[List[Tuple[str, str]]] = None,
                 retry_after_s: Optional[float] = None) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.violations: List[Tuple[str, str]] = violations or []  # [(field, description)]
        self.retry_after_s = retry_after_s

    @property
    def retryable(self) -> bool:
        """True when the server said retrying can succeed: a retryable code with a retry delay."""
        return self.code in _RETRYABLE and self.retry_after_s is not None


def _error(rpc_error: grpc.RpcError) -> WavecrestError:
    violations: List[Tuple[str, str]] = []
    retry: Optional[float] = None
    call: Any = rpc_error
    for key, value in call.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            violations, retry = _status.decode_details(value)
    return WavecrestError(call.code(), call.details() or "", violations, retry)


# ---- enums, as the CLI spells them -------------------------------------------------------------

def enum_value(enum: Any, prefix: str, value: Union[str, int], field: str) -> int:
    """An enum value from its number, its full name ("MODE_AUTO") or the CLI's spelling ("auto",
    "fp8-e4m3"). ValueError names the field and the allowed spellings."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    for candidate in (text, f"{prefix}_{text.upper().replace('-', '_')}"):
        if candidate in enum.keys():
            return int(enum.Value(candidate))
    allowed = [k[len(prefix) + 1:].lower() for k in enum.keys() if not k.endswith("_UNSPECIFIED")]
    raise ValueError(f"{field}: unknown value {value!r}; allowed: {', '.join(allowed)}")


def _mode(value: Union[str, int]) -> Any:  # the enum type protoc declares
    return enum_value(advisor_pb2.Mode, "MODE", value, "mode")


def _dtype(value: Union[str, int]) -> Any:  # the enum type protoc declares
    return enum_value(model_pb2.Dtype, "DTYPE", value, "dtype")


def _layout(value: Union[str, int]) -> Any:  # the enum type protoc declares
    return enum_value(model_pb2.Layout, "LAYOUT", value, "layout")


def _knob(value: Union[str, int]) -> Any:  # the enum type protoc declares
    aliases = {"kv_heads": "KV_HEADS", "kv-heads": "KV_HEADS", "ffn": "FFN", "vocab": "VOCAB"}
    if isinstance(value, str) and value in aliases:
        value = aliases[value]
    return enum_value(advisor_pb2.Knob, "KNOB", value, "vary")


def _dimension(value: Union[str, int]) -> Any:  # the enum type protoc declares
    aliases = {"m": "GEMM_M", "n": "GEMM_N", "k": "GEMM_K", "tp": "TENSOR_PARALLEL"}
    if isinstance(value, str) and value.lower() in aliases:
        value = aliases[value.lower()]
    return enum_value(advisor_pb2.SweepDimension, "SWEEP_DIMENSION", value, "vary")


# ---- models ------------------------------------------------------------------------------------

def _looks_like_hf_config(obj: Mapping[str, Any]) -> bool:
    return "model_type" in obj or "architectures" in obj


def load_model(path: Union[str, "os.PathLike[str]"]) -> model_pb2.ModelSpec:
    """A wavecrest spec file as a ModelSpec. A Hugging Face config.json is not converted here
    (the mapping lives in the server): pass its path as `model=` to a call instead."""
    text = Path(path).read_text()
    obj = json.loads(text)
    if isinstance(obj, dict) and _looks_like_hf_config(obj):
        raise ValueError(f"{path}: a Hugging Face config.json; pass the path as model=... to a "
                         "call (the server imports it with the CLI's mapping)")
    spec = model_pb2.ModelSpec()
    json_format.Parse(text, spec)
    return spec


def _model_fields(model: Optional[ModelLike], hf_config: Optional[Union[str, "os.PathLike[str]"]],
                  overrides: Mapping[str, Any]) -> Dict[str, Any]:
    """The request fields `model` and `hf_config_json` for a ModelLike plus overrides (ModelSpec
    field names, e.g. seq_length=4096, tensor_parallel=2)."""
    spec = model_pb2.ModelSpec()
    hf_text = ""
    if hf_config is not None:
        hf_text = Path(hf_config).read_text()
    if isinstance(model, model_pb2.ModelSpec):
        spec.CopyFrom(model)
    elif isinstance(model, Mapping):
        if _looks_like_hf_config(model):
            hf_text = json.dumps(dict(model))
        else:
            json_format.ParseDict(dict(model), spec)
    elif model is not None:
        text = Path(model).read_text()
        obj = json.loads(text)
        if isinstance(obj, dict) and _looks_like_hf_config(obj):
            hf_text = text
        else:
            json_format.Parse(text, spec)
    for key, value in overrides.items():
        if key in ("dtype",):
            value = _dtype(value)
        elif key == "mlp":
            value = enum_value(model_pb2.Mlp, "MLP", value, "mlp")
        elif key == "attention":
            value = enum_value(model_pb2.Attention, "ATTENTION", value, "attention")
        elif key == "workload":
            value = enum_value(model_pb2.Workload, "WORKLOAD", value, "workload")
        try:
            setattr(spec, key, value)
        except AttributeError:
            raise ValueError(f"model.{key}: not a ModelSpec field") from None
    fields: Dict[str, Any] = {"model": spec}
    if hf_text:
        fields["hf_config_json"] = hf_text
    return fields


def _split_fields(request_type: Any, fields: Mapping[str, Any]) -> Tuple[Dict[str, Any],
                                                                        Dict[str, Any]]:
    """Keyword fields as (the request's own, ModelSpec overrides): a name the request has goes to
    it; any other must be a ModelSpec field (checked when the model is built)."""
    own = set(request_type.DESCRIPTOR.fields_by_name)
    request_fields = {k: v for k, v in fields.items() if k in own and k != "model"}
    model_fields = {k: v for k, v in fields.items() if k not in own}
    return request_fields, model_fields


@dataclass(frozen=True)
class Recommendation(results.RecommendResponse):
    """A Recommend answer: the RecommendResponse's fields, typed (candidates, verdict, held,
    notes, ...; `verdict` prints as CHANGE, KEEP or NO_CANDIDATES and equals those strings), with
    the candidate to adopt (`best`) and what every candidate kept of the model and what `vary`
    released, by name (`kept`, `released`). `response` is the protobuf message itself."""

    @property
    def best(self) -> Optional[results.Candidate]:
        """The first candidate that beats the baseline (what CHANGE recommends), or None."""
        for c in self.candidates:
            if c.beats_baseline:
                return c
        return None

    @property
    def kept(self) -> Dict[str, str]:
        """What every candidate kept of the baseline (the same model), by the name `vary`
        releases it with: {"kv_group": "7 query heads per KV head", ...}."""
        return {h.name: h.description for h in self.held if not h.released}

    @property
    def released(self) -> Dict[str, str]:
        """What the request's `vary` released (kv_group, kv_cache, head_dim, total_params), by
        name, with the baseline's figure."""
        return {h.name: h.description for h in self.held if h.released}

    @property
    def response(self) -> advisor_pb2.RecommendResponse:
        """The protobuf message."""
        message: advisor_pb2.RecommendResponse = message_of(self)
        return message

    def __repr__(self) -> str:
        return (f"Recommendation(verdict={self.verdict}, candidates={len(self.candidates)}, "
                f"kept={sorted(self.kept)}, released={sorted(self.released)})")


# ---- the client --------------------------------------------------------------------------------

class _TokenInterceptor(grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
                        grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Adds "authorization: Bearer <token>" to every call."""

    def __init__(self, token: str) -> None:
        self._metadata = ("authorization", f"Bearer {token}")

    def _with_token(self, details: Any) -> Any:
        return details._replace(metadata=list(details.metadata or []) + [self._metadata])

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._with_token(details), request)


T = TypeVar("T")
S = TypeVar("S", bound=Message)


# Deadlines as the CLI derives them (client/cli.h): 60 s, or for a call that may measure its
# measuring budget (the server's default 60 s) plus 30 s.
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_GPU_SECONDS = 60.0
DEADLINE_AFTER_BUDGET_S = 30.0


class AdvisorClient:
    """The Advisor's calls, each with a deadline (`timeout_s`). A call that fails with a retryable
    code and the server's RetryInfo (queue full, worker restarting) is retried after the delay
    the server asked for, up to `retries` times and within the deadline; other failures raise
    WavecrestError at once. Streaming calls report progress through `on_progress`.

        client = AdvisorClient("127.0.0.1:50051")
        best = client.recommend("config.json", "h100-sxm", mode="predicted", top=3)
    """

    def __init__(self, address: str, *, timeout_s: Optional[float] = None, retries: int = 3,
                 tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None, token: Optional[str] = None) -> None:
        """TLS when `tls_ca` (the server's CA, a PEM file) is given; mutual TLS with `tls_cert`
        and `tls_key`. `token` (default: $WAVECREST_TOKEN) is sent as a bearer token.
        `timeout_s` None: 60 s, and for a recommend or sweep that may measure its
        max_gpu_seconds (default 60) + 30, so the server answers, with what it measured, first."""
        self.timeout_s = timeout_s
        self.retries = retries
        options = [("grpc.keepalive_time_ms", 30000), ("grpc.keepalive_timeout_ms", 10000)]
        channel: grpc.Channel
        if tls_ca:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=Path(tls_ca).read_bytes(),
                private_key=Path(tls_key).read_bytes() if tls_key else None,
                certificate_chain=Path(tls_cert).read_bytes() if tls_cert else None)
            channel = grpc.secure_channel(address, credentials, options=options)
        else:
            channel = grpc.insecure_channel(address, options=options)
        token = token or os.environ.get("WAVECREST_TOKEN")
        if token:
            channel = grpc.intercept_channel(channel, _TokenInterceptor(token))
        self.channel = channel
        self.stub = advisor_pb2_grpc.AdvisorStub(channel)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> "AdvisorClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- call machinery --

    def _unary(self, method: Callable[..., T], request: Any) -> T:
        deadline = time.monotonic() + self._timeout()
        attempt = 0
        while True:
            try:
                return method(request, timeout=max(0.001, deadline - time.monotonic()))
            except grpc.RpcError as e:
                err = _error(e)
                if not self._should_retry(err, attempt, deadline):
                    raise err from None
                time.sleep(err.retry_after_s or 0)
                attempt += 1

    def _timeout(self, request: Any = None) -> float:
        """The deadline of a call in seconds: `timeout_s`, or derived from a measuring budget."""
        if self.timeout_s is not None:
            return self.timeout_s
        mode = getattr(request, "mode", advisor_pb2.MODE_PREDICTED)
        if request is None or mode == advisor_pb2.MODE_PREDICTED:
            return DEFAULT_TIMEOUT_S
        return (getattr(request, "max_gpu_seconds", 0) or DEFAULT_MAX_GPU_SECONDS) + DEADLINE_AFTER_BUDGET_S

    def _stream(self, method: Callable[..., Iterable[S]], request: Any,
                on_progress: Optional[ProgressCallback]) -> S:
        """The final message (done=True) of a streaming call; progress to `on_progress`. Retried
        only when it failed before the server sent anything."""
        deadline = time.monotonic() + self._timeout(request)
        attempt = 0
        while True:
            received = False
            final: Optional[S] = None
            try:
                for message in method(request, timeout=max(0.001, deadline - time.monotonic())):
                    received = True
                    msg: Any = message
                    if msg.done:
                        final = message
                    elif msg.HasField("progress") and on_progress is not None:
                        on_progress(msg.progress)
                if final is None:
                    raise WavecrestError(grpc.StatusCode.INTERNAL, "the stream ended without a result")
                return final
            except grpc.RpcError as e:
                err = _error(e)
                if received or not self._should_retry(err, attempt, deadline):
                    raise err from None
                time.sleep(err.retry_after_s or 0)
                attempt += 1

    def _should_retry(self, err: WavecrestError, attempt: int, deadline: float) -> bool:
        return (err.retryable and attempt < self.retries
                and time.monotonic() + (err.retry_after_s or 0) < deadline)

    # -- the Advisor's calls --

    def analyze(self, model: Optional[ModelLike] = None, gpu: str = "h100-sxm", *,
                hf_config: Optional[Union[str, "os.PathLike[str]"]] = None,
                run: Optional[Union[advisor_pb2.RunConfig, Mapping[str, Any]]] = None,
                flop_count: str = "",
                **overrides: Any) -> results.AnalyzeResponse:
        """The GEMMs of one step, their predicted cost and the paper's rules broken.
        `overrides` are ModelSpec fields (seq_length=4096, tensor_parallel=2, dtype="fp8-e4m3");
        `run` a training run's RunConfig, or its fields as the CLI's flags say them
        ({"num_gpus": 64, "global_batch": 512, "recompute": "full", "tp_overlap": 0.5}): the
        answer is then the run's. `flop_count` is how MFU and TFLOP/s count attention: "full"
        (the default, the whole s x s product) or "causal" (half, as Megatron-Core counts it);
        the answer's flop_count says which."""
        if flop_count not in ("", "full", "causal"):
            raise ValueError(f"flop_count: unknown value {flop_count!r}; allowed: full, causal")
        request = advisor_pb2.AnalyzeRequest(gpu=gpu, flop_count=flop_count,
                                             **_model_fields(model, hf_config, overrides))
        if isinstance(run, advisor_pb2.RunConfig):
            request.run.CopyFrom(run)
        elif run is not None:
            fields = dict(run)
            if "recompute" in fields:
                fields["recompute"] = enum_value(advisor_pb2.Recompute, "RECOMPUTE",
                                                 fields["recompute"], "run.recompute")
            json_format.ParseDict(fields, request.run)
        response: advisor_pb2.AnalyzeResponse = self._unary(self.stub.Analyze, request)
        typed: results.AnalyzeResponse = from_message(response)
        return typed

    def recommend(self, model: Optional[ModelLike] = None, gpu: str = "h100-sxm", *,
                  hf_config: Optional[Union[str, "os.PathLike[str]"]] = None,
                  mode: Union[str, int] = "auto", vary: Sequence[Union[str, int]] = (),
                  on_progress: Optional[ProgressCallback] = None,
                  model_overrides: Optional[Mapping[str, Any]] = None,
                  **fields: Any) -> "Recommendation":
        """Ranked candidates, with the verdict by name, and what they held of the baseline
        (`held`, `released`). `vary` as the CLI spells it (["heads", "hidden"], and the held
        properties to release: "kv_group", "kv_cache", "head_dim", "total_params"); keyword
        `fields` are RecommendRequest fields (param_tolerance=0.02,
        top=5, keep_layers=True, tensor_parallel_options=[1, 2, 4, 8]) or, as in analyze(),
        ModelSpec fields (seq_length=4096, tensor_parallel=2, workload="decode")."""
        constraints, overrides = _split_fields(advisor_pb2.RecommendRequest, fields)
        overrides.update(model_overrides or {})
        request = advisor_pb2.RecommendRequest(
            gpu=gpu, mode=_mode(mode), vary=[_knob(v) for v in vary], **constraints,
            **_model_fields(model, hf_config, overrides))
        response: advisor_pb2.RecommendResponse = self._stream(self.stub.Recommend, request,
                                                               on_progress)
        typed: Recommendation = from_message(response, Recommendation)
        return typed

    def sweep(self, model: Optional[ModelLike] = None, gpu: str = "h100-sxm", *,
              vary: Union[str, int], start: int, stop: int, step: int,
              hf_config: Optional[Union[str, "os.PathLike[str]"]] = None,
              gemm: Optional[Tuple[int, int, int]] = None, mode: Union[str, int] = "predicted",
              on_progress: Optional[ProgressCallback] = None,
              model_overrides: Optional[Mapping[str, Any]] = None) -> results.SweepResponse:
        """Throughput along one dimension (vary="hidden", "heads", ..., or "m"/"n"/"k" of `gemm`)
        from `start` to `stop` (inclusive) by `step`."""
        fields: Dict[str, Any] = {}
        if gemm is not None:
            fields["gemm"] = model_pb2.GemmShape(m=gemm[0], n=gemm[1], k=gemm[2], batch=1)
        if model is not None or hf_config is not None:
            fields.update(_model_fields(model, hf_config, model_overrides or {}))
        request = advisor_pb2.SweepRequest(gpu=gpu, vary=_dimension(vary), to=stop, step=step,
                                           mode=_mode(mode), **fields)
        setattr(request, "from", start)  # `from` is a Python keyword
        response: advisor_pb2.SweepResponse = self._stream(self.stub.Sweep, request, on_progress)
        typed: results.SweepResponse = from_message(response)
        return typed

    def time_gemms(self, gpu: str, gemms: Optional[Iterable[Sequence[int]]] = None, *,
                   model: Optional[ModelLike] = None, dtype: Union[str, int] = "bf16",
                   layout: Union[str, int] = "tn", mode: Union[str, int] = "auto",
                   on_progress: Optional[ProgressCallback] = None) -> List[results.GemmTiming]:
        """GemmTimings of [(m, n, k) or (m, n, k, batch)], or of every GEMM of `model`."""
        request = advisor_pb2.TimeGemmsRequest(gpu=gpu, dtype=_dtype(dtype), layout=_layout(layout),
                                               mode=_mode(mode))
        for shape in gemms or []:
            m, n, k, *batch = shape
            request.gemms.add(m=m, n=n, k=k, batch=batch[0] if batch else 1)
        if model is not None:
            fields = _model_fields(model, None, {})
            request.model.CopyFrom(fields["model"])
            request.hf_config_json = fields.get("hf_config_json", "")
        deadline = time.monotonic() + self._timeout()
        timings: List[Any] = []
        try:
            for message in self.stub.TimeGemms(request, timeout=max(0.001, deadline - time.monotonic())):
                if message.HasField("timing"):
                    timings.append(message.timing)
                elif message.HasField("progress") and on_progress is not None:
                    on_progress(message.progress)
        except grpc.RpcError as e:
            raise _error(e) from None
        return [from_message(t) for t in sorted(timings, key=lambda t: int(t.index))]

    def list_devices(self) -> results.ListDevicesResponse:
        response: advisor_pb2.ListDevicesResponse = self._unary(self.stub.ListDevices,
                                                                advisor_pb2.ListDevicesRequest())
        typed: results.ListDevicesResponse = from_message(response)
        return typed

    def health(self, service: str = "") -> str:
        """grpc.health.v1 Check: "SERVING", "NOT_SERVING", ... ("" = the whole server;
        "wavecrest.v1.Advisor/measure" = a GPU worker is up).

        The two one-field messages are encoded here: a generated module would collide with
        grpcio's own `grpc` package."""
        name = service.encode()[:127]
        check = self.channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda s: (b"\x0a" + bytes([len(s)]) + s) if s else b"",
            response_deserializer=lambda b: b[1] if len(b) >= 2 and b[0] == 0x08 else 0)
        status = self._unary(check, name)
        return {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}.get(
            int(status), "UNKNOWN")


def to_json(message: Any) -> Dict[str, Any]:
    """An answer (typed, or its protobuf message) as a dict, in the protobuf JSON mapping with
    the .proto's field names (enums by their full names: "VERDICT_CHANGE")."""
    if not isinstance(message, Message):
        message = message_of(message)
    result: Dict[str, Any] = json.loads(
        json_format.MessageToJson(message, preserving_proto_field_name=True))
    return result

