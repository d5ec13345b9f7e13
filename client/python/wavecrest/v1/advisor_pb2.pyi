from wavecrest.v1 import model_pb2 as _model_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BOUND_COMPUTE: Bound
BOUND_LATENCY: Bound
BOUND_MEMORY: Bound
BOUND_UNSPECIFIED: Bound
DESCRIPTOR: _descriptor.FileDescriptor
KNOB_EXPERTS: Knob
KNOB_FFN: Knob
KNOB_HEADS: Knob
KNOB_HEAD_DIM: Knob
KNOB_HIDDEN: Knob
KNOB_KV_CACHE: Knob
KNOB_KV_GROUP: Knob
KNOB_KV_HEADS: Knob
KNOB_LAYERS: Knob
KNOB_TOTAL_PARAMS: Knob
KNOB_UNSPECIFIED: Knob
KNOB_VOCAB: Knob
LAYER_KIND_FUSED_ATTENTION: LayerKind
LAYER_KIND_TRANSFORMER: LayerKind
LAYER_KIND_UNFUSED_ATTENTION: LayerKind
LAYER_KIND_UNSPECIFIED: LayerKind
MODE_AUTO: Mode
MODE_MEASURED: Mode
MODE_PREDICTED: Mode
MODE_UNSPECIFIED: Mode
RECOMPUTE_FULL: Recompute
RECOMPUTE_NONE: Recompute
RECOMPUTE_OP: Recompute
RECOMPUTE_SELECTIVE: Recompute
RECOMPUTE_UNSPECIFIED: Recompute
SWEEP_DIMENSION_FFN: SweepDimension
SWEEP_DIMENSION_GEMM_K: SweepDimension
SWEEP_DIMENSION_GEMM_M: SweepDimension
SWEEP_DIMENSION_GEMM_N: SweepDimension
SWEEP_DIMENSION_HEADS: SweepDimension
SWEEP_DIMENSION_HIDDEN: SweepDimension
SWEEP_DIMENSION_KV_HEADS: SweepDimension
SWEEP_DIMENSION_MICRO_BATCH: SweepDimension
SWEEP_DIMENSION_SEQ: SweepDimension
SWEEP_DIMENSION_TENSOR_PARALLEL: SweepDimension
SWEEP_DIMENSION_UNSPECIFIED: SweepDimension
SWEEP_DIMENSION_VOCAB: SweepDimension
VERDICT_CHANGE: Verdict
VERDICT_KEEP: Verdict
VERDICT_NO_CANDIDATES: Verdict
VERDICT_UNSPECIFIED: Verdict

class AnalyzeRequest(_message.Message):
    __slots__ = ["flop_count", "gpu", "hf_config_json", "model", "run"]
    FLOP_COUNT_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    HF_CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    flop_count: str
    gpu: str
    hf_config_json: str
    model: _model_pb2.ModelSpec
    run: RunConfig
    def __init__(self, model: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., gpu: _Optional[str] = ..., hf_config_json: _Optional[str] = ..., run: _Optional[_Union[RunConfig, _Mapping]] = ..., flop_count: _Optional[str] = ...) -> None: ...

class AnalyzeResponse(_message.Message):
    __slots__ = ["assumed", "assumptions", "elementwise_time_s", "flop_count", "gemm_time_s", "gemms", "gpu", "kernels", "layouts", "layouts_examined", "layouts_fit", "measured_step", "memory", "memory_bandwidth_utilization", "mfu", "model", "model_flops", "params", "provenance", "rules", "step", "step_flops", "step_time_s", "tensor_parallel_run", "tflops_per_gpu", "tokens_per_second_per_gpu", "tokens_per_step"]
    ASSUMED_FIELD_NUMBER: _ClassVar[int]
    ASSUMPTIONS_FIELD_NUMBER: _ClassVar[int]
    ELEMENTWISE_TIME_S_FIELD_NUMBER: _ClassVar[int]
    FLOP_COUNT_FIELD_NUMBER: _ClassVar[int]
    GEMMS_FIELD_NUMBER: _ClassVar[int]
    GEMM_TIME_S_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    LAYOUTS_EXAMINED_FIELD_NUMBER: _ClassVar[int]
    LAYOUTS_FIELD_NUMBER: _ClassVar[int]
    LAYOUTS_FIT_FIELD_NUMBER: _ClassVar[int]
    MEASURED_STEP_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BANDWIDTH_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MODEL_FLOPS_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    STEP_FLOPS_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_S_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PARALLEL_RUN_FIELD_NUMBER: _ClassVar[int]
    TFLOPS_PER_GPU_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_SECOND_PER_GPU_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    assumed: Assumed
    assumptions: _containers.RepeatedScalarFieldContainer[str]
    elementwise_time_s: float
    flop_count: str
    gemm_time_s: float
    gemms: _containers.RepeatedCompositeFieldContainer[GemmAnalysis]
    gpu: str
    kernels: KernelStep
    layouts: _containers.RepeatedCompositeFieldContainer[LayoutOption]
    layouts_examined: int
    layouts_fit: int
    measured_step: MeasuredStep
    memory: MemoryEstimate
    memory_bandwidth_utilization: float
    mfu: float
    model: _model_pb2.ModelSpec
    model_flops: float
    params: ParameterCounts
    provenance: _model_pb2.Provenance
    rules: _containers.RepeatedCompositeFieldContainer[RuleViolation]
    step: StepBreakdown
    step_flops: float
    step_time_s: float
    tensor_parallel_run: StepBreakdown
    tflops_per_gpu: float
    tokens_per_second_per_gpu: float
    tokens_per_step: int
    def __init__(self, model: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., gpu: _Optional[str] = ..., gemms: _Optional[_Iterable[_Union[GemmAnalysis, _Mapping]]] = ..., params: _Optional[_Union[ParameterCounts, _Mapping]] = ..., step_flops: _Optional[float] = ..., model_flops: _Optional[float] = ..., tokens_per_step: _Optional[int] = ..., gemm_time_s: _Optional[float] = ..., elementwise_time_s: _Optional[float] = ..., step_time_s: _Optional[float] = ..., mfu: _Optional[float] = ..., tokens_per_second_per_gpu: _Optional[float] = ..., rules: _Optional[_Iterable[_Union[RuleViolation, _Mapping]]] = ..., provenance: _Optional[_Union[_model_pb2.Provenance, _Mapping]] = ..., memory: _Optional[_Union[MemoryEstimate, _Mapping]] = ..., measured_step: _Optional[_Union[MeasuredStep, _Mapping]] = ..., memory_bandwidth_utilization: _Optional[float] = ..., step: _Optional[_Union[StepBreakdown, _Mapping]] = ..., kernels: _Optional[_Union[KernelStep, _Mapping]] = ..., assumptions: _Optional[_Iterable[str]] = ..., flop_count: _Optional[str] = ..., tflops_per_gpu: _Optional[float] = ..., assumed: _Optional[_Union[Assumed, _Mapping]] = ..., tensor_parallel_run: _Optional[_Union[StepBreakdown, _Mapping]] = ..., layouts: _Optional[_Iterable[_Union[LayoutOption, _Mapping]]] = ..., layouts_examined: _Optional[int] = ..., layouts_fit: _Optional[int] = ...) -> None: ...

class Assumed(_message.Message):
    __slots__ = ["attention", "dtype", "kv_cache_length", "micro_batch_size", "seq_length", "summary", "tensor_parallel", "workload"]
    ATTENTION_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    KV_CACHE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    SEQ_LENGTH_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    attention: _model_pb2.Attention
    dtype: _model_pb2.Dtype
    kv_cache_length: int
    micro_batch_size: int
    seq_length: int
    summary: str
    tensor_parallel: int
    workload: _model_pb2.Workload
    def __init__(self, workload: _Optional[_Union[_model_pb2.Workload, str]] = ..., seq_length: _Optional[int] = ..., micro_batch_size: _Optional[int] = ..., kv_cache_length: _Optional[int] = ..., tensor_parallel: _Optional[int] = ..., dtype: _Optional[_Union[_model_pb2.Dtype, str]] = ..., attention: _Optional[_Union[_model_pb2.Attention, str]] = ..., summary: _Optional[str] = ...) -> None: ...

class Candidate(_message.Message):
    __slots__ = ["baseline", "beats_baseline", "elementwise_share", "knob_gains", "layer_measured_share", "measured_share", "memory", "memory_bandwidth_utilization", "mfu", "model", "param_change", "params", "rank", "reasons", "source", "speedup", "speedup_uncertainty", "step_time_s", "tensor_parallel_legal", "time_per_output_token_s", "tokens_per_second_per_gpu"]
    BASELINE_FIELD_NUMBER: _ClassVar[int]
    BEATS_BASELINE_FIELD_NUMBER: _ClassVar[int]
    ELEMENTWISE_SHARE_FIELD_NUMBER: _ClassVar[int]
    KNOB_GAINS_FIELD_NUMBER: _ClassVar[int]
    LAYER_MEASURED_SHARE_FIELD_NUMBER: _ClassVar[int]
    MEASURED_SHARE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BANDWIDTH_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    PARAM_CHANGE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_UNCERTAINTY_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_S_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PARALLEL_LEGAL_FIELD_NUMBER: _ClassVar[int]
    TIME_PER_OUTPUT_TOKEN_S_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_SECOND_PER_GPU_FIELD_NUMBER: _ClassVar[int]
    baseline: bool
    beats_baseline: bool
    elementwise_share: float
    knob_gains: _containers.RepeatedCompositeFieldContainer[KnobGain]
    layer_measured_share: float
    measured_share: float
    memory: MemoryEstimate
    memory_bandwidth_utilization: float
    mfu: float
    model: _model_pb2.ModelSpec
    param_change: float
    params: ParameterCounts
    rank: int
    reasons: _containers.RepeatedScalarFieldContainer[str]
    source: _model_pb2.Source
    speedup: float
    speedup_uncertainty: float
    step_time_s: float
    tensor_parallel_legal: _containers.RepeatedScalarFieldContainer[int]
    time_per_output_token_s: float
    tokens_per_second_per_gpu: float
    def __init__(self, rank: _Optional[int] = ..., baseline: bool = ..., model: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., params: _Optional[_Union[ParameterCounts, _Mapping]] = ..., param_change: _Optional[float] = ..., step_time_s: _Optional[float] = ..., tokens_per_second_per_gpu: _Optional[float] = ..., speedup: _Optional[float] = ..., speedup_uncertainty: _Optional[float] = ..., mfu: _Optional[float] = ..., source: _Optional[_Union[_model_pb2.Source, str]] = ..., reasons: _Optional[_Iterable[str]] = ..., elementwise_share: _Optional[float] = ..., memory: _Optional[_Union[MemoryEstimate, _Mapping]] = ..., beats_baseline: bool = ..., time_per_output_token_s: _Optional[float] = ..., memory_bandwidth_utilization: _Optional[float] = ..., layer_measured_share: _Optional[float] = ..., measured_share: _Optional[float] = ..., knob_gains: _Optional[_Iterable[_Union[KnobGain, _Mapping]]] = ..., tensor_parallel_legal: _Optional[_Iterable[int]] = ...) -> None: ...

class CatalogGpu(_message.Message):
    __slots__ = ["alignment_bytes", "architecture", "compute_capability", "display_name", "dtypes", "l2_bytes", "memory_bandwidth_gbps", "memory_bytes", "name", "peak_bf16_tflops", "peak_fp8_tflops", "sm_count"]
    ALIGNMENT_BYTES_FIELD_NUMBER: _ClassVar[int]
    ARCHITECTURE_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DTYPES_FIELD_NUMBER: _ClassVar[int]
    L2_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BANDWIDTH_GBPS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PEAK_BF16_TFLOPS_FIELD_NUMBER: _ClassVar[int]
    PEAK_FP8_TFLOPS_FIELD_NUMBER: _ClassVar[int]
    SM_COUNT_FIELD_NUMBER: _ClassVar[int]
    alignment_bytes: int
    architecture: str
    compute_capability: int
    display_name: str
    dtypes: _containers.RepeatedScalarFieldContainer[_model_pb2.Dtype]
    l2_bytes: int
    memory_bandwidth_gbps: float
    memory_bytes: int
    name: str
    peak_bf16_tflops: float
    peak_fp8_tflops: float
    sm_count: int
    def __init__(self, name: _Optional[str] = ..., display_name: _Optional[str] = ..., architecture: _Optional[str] = ..., compute_capability: _Optional[int] = ..., sm_count: _Optional[int] = ..., peak_bf16_tflops: _Optional[float] = ..., peak_fp8_tflops: _Optional[float] = ..., memory_bandwidth_gbps: _Optional[float] = ..., memory_bytes: _Optional[int] = ..., l2_bytes: _Optional[int] = ..., alignment_bytes: _Optional[int] = ..., dtypes: _Optional[_Iterable[_Union[_model_pb2.Dtype, str]]] = ...) -> None: ...

class ClearQuarantineRequest(_message.Message):
    __slots__ = ["gpu"]
    GPU_FIELD_NUMBER: _ClassVar[int]
    gpu: str
    def __init__(self, gpu: _Optional[str] = ...) -> None: ...

class ClearQuarantineResponse(_message.Message):
    __slots__ = ["cleared"]
    CLEARED_FIELD_NUMBER: _ClassVar[int]
    cleared: int
    def __init__(self, cleared: _Optional[int] = ...) -> None: ...

class DimAlignment(_message.Message):
    __slots__ = ["largest_pow2", "meets_rule"]
    LARGEST_POW2_FIELD_NUMBER: _ClassVar[int]
    MEETS_RULE_FIELD_NUMBER: _ClassVar[int]
    largest_pow2: int
    meets_rule: bool
    def __init__(self, largest_pow2: _Optional[int] = ..., meets_rule: bool = ...) -> None: ...

class ExampleModel(_message.Message):
    __slots__ = ["file", "hf_config_json", "spec"]
    FILE_FIELD_NUMBER: _ClassVar[int]
    HF_CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    file: str
    hf_config_json: str
    spec: _model_pb2.ModelSpec
    def __init__(self, file: _Optional[str] = ..., spec: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., hf_config_json: _Optional[str] = ...) -> None: ...

class ExportMeasurementsRequest(_message.Message):
    __slots__ = ["gpu"]
    GPU_FIELD_NUMBER: _ClassVar[int]
    gpu: str
    def __init__(self, gpu: _Optional[str] = ...) -> None: ...

class ExportMeasurementsResponse(_message.Message):
    __slots__ = ["csv", "rows"]
    CSV_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    csv: str
    rows: int
    def __init__(self, csv: _Optional[str] = ..., rows: _Optional[int] = ...) -> None: ...

class ExportModelRequest(_message.Message):
    __slots__ = ["base_config_json", "format", "model"]
    BASE_CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    base_config_json: str
    format: str
    model: _model_pb2.ModelSpec
    def __init__(self, model: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., format: _Optional[str] = ..., base_config_json: _Optional[str] = ...) -> None: ...

class ExportModelResponse(_message.Message):
    __slots__ = ["changed_fields", "text"]
    CHANGED_FIELDS_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    changed_fields: _containers.RepeatedScalarFieldContainer[str]
    text: str
    def __init__(self, text: _Optional[str] = ..., changed_fields: _Optional[_Iterable[str]] = ...) -> None: ...

class GemmAnalysis(_message.Message):
    __slots__ = ["bound", "error_band_p10", "error_band_p90", "gemm", "k_alignment", "m_alignment", "n_alignment", "penalties", "step_flop_share", "tflops", "tile", "time_s"]
    BOUND_FIELD_NUMBER: _ClassVar[int]
    ERROR_BAND_P10_FIELD_NUMBER: _ClassVar[int]
    ERROR_BAND_P90_FIELD_NUMBER: _ClassVar[int]
    GEMM_FIELD_NUMBER: _ClassVar[int]
    K_ALIGNMENT_FIELD_NUMBER: _ClassVar[int]
    M_ALIGNMENT_FIELD_NUMBER: _ClassVar[int]
    N_ALIGNMENT_FIELD_NUMBER: _ClassVar[int]
    PENALTIES_FIELD_NUMBER: _ClassVar[int]
    STEP_FLOP_SHARE_FIELD_NUMBER: _ClassVar[int]
    TFLOPS_FIELD_NUMBER: _ClassVar[int]
    TILE_FIELD_NUMBER: _ClassVar[int]
    TIME_S_FIELD_NUMBER: _ClassVar[int]
    bound: Bound
    error_band_p10: float
    error_band_p90: float
    gemm: _model_pb2.GemmReport
    k_alignment: DimAlignment
    m_alignment: DimAlignment
    n_alignment: DimAlignment
    penalties: _containers.RepeatedScalarFieldContainer[str]
    step_flop_share: float
    tflops: float
    tile: TileChoice
    time_s: float
    def __init__(self, gemm: _Optional[_Union[_model_pb2.GemmReport, _Mapping]] = ..., step_flop_share: _Optional[float] = ..., m_alignment: _Optional[_Union[DimAlignment, _Mapping]] = ..., n_alignment: _Optional[_Union[DimAlignment, _Mapping]] = ..., k_alignment: _Optional[_Union[DimAlignment, _Mapping]] = ..., time_s: _Optional[float] = ..., tflops: _Optional[float] = ..., bound: _Optional[_Union[Bound, str]] = ..., tile: _Optional[_Union[TileChoice, _Mapping]] = ..., error_band_p10: _Optional[float] = ..., error_band_p90: _Optional[float] = ..., penalties: _Optional[_Iterable[str]] = ...) -> None: ...

class GemmTiming(_message.Message):
    __slots__ = ["dtype", "index", "layout", "provenance", "shape", "stats", "tflops", "time_s", "used_by"]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    TFLOPS_FIELD_NUMBER: _ClassVar[int]
    TIME_S_FIELD_NUMBER: _ClassVar[int]
    USED_BY_FIELD_NUMBER: _ClassVar[int]
    dtype: _model_pb2.Dtype
    index: int
    layout: _model_pb2.Layout
    provenance: _model_pb2.Provenance
    shape: _model_pb2.GemmShape
    stats: TimingStats
    tflops: float
    time_s: float
    used_by: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, shape: _Optional[_Union[_model_pb2.GemmShape, _Mapping]] = ..., layout: _Optional[_Union[_model_pb2.Layout, str]] = ..., dtype: _Optional[_Union[_model_pb2.Dtype, str]] = ..., time_s: _Optional[float] = ..., tflops: _Optional[float] = ..., stats: _Optional[_Union[TimingStats, _Mapping]] = ..., provenance: _Optional[_Union[_model_pb2.Provenance, _Mapping]] = ..., index: _Optional[int] = ..., used_by: _Optional[_Iterable[str]] = ...) -> None: ...

class HeldProperty(_message.Message):
    __slots__ = ["description", "name", "released"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    description: str
    name: str
    released: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., released: bool = ...) -> None: ...

class KernelStep(_message.Message):
    __slots__ = ["memory", "mfu", "step_time_s", "tokens_per_second_per_gpu"]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_S_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_SECOND_PER_GPU_FIELD_NUMBER: _ClassVar[int]
    memory: MemoryEstimate
    mfu: float
    step_time_s: float
    tokens_per_second_per_gpu: float
    def __init__(self, step_time_s: _Optional[float] = ..., mfu: _Optional[float] = ..., tokens_per_second_per_gpu: _Optional[float] = ..., memory: _Optional[_Union[MemoryEstimate, _Mapping]] = ...) -> None: ...

class KnobGain(_message.Message):
    __slots__ = ["change", "gain", "parts", "required", "uncertainty"]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    GAIN_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    UNCERTAINTY_FIELD_NUMBER: _ClassVar[int]
    change: str
    gain: float
    parts: _containers.RepeatedScalarFieldContainer[str]
    required: bool
    uncertainty: float
    def __init__(self, change: _Optional[str] = ..., gain: _Optional[float] = ..., uncertainty: _Optional[float] = ..., parts: _Optional[_Iterable[str]] = ..., required: bool = ...) -> None: ...

class LayerShape(_message.Message):
    __slots__ = ["kind", "layer", "routing"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LAYER_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    kind: LayerKind
    layer: _model_pb2.ModelSpec
    routing: str
    def __init__(self, kind: _Optional[_Union[LayerKind, str]] = ..., layer: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., routing: _Optional[str] = ...) -> None: ...

class LayerTiming(_message.Message):
    __slots__ = ["flops", "index", "key", "model_layers", "predicted_elementwise_s", "predicted_program_s", "predicted_sum_s", "provenance", "role", "shape", "stats", "sum_of_parts_reason", "tflops", "time_s"]
    FLOPS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    MODEL_LAYERS_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_ELEMENTWISE_S_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_PROGRAM_S_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_SUM_S_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    SUM_OF_PARTS_REASON_FIELD_NUMBER: _ClassVar[int]
    TFLOPS_FIELD_NUMBER: _ClassVar[int]
    TIME_S_FIELD_NUMBER: _ClassVar[int]
    flops: float
    index: int
    key: str
    model_layers: int
    predicted_elementwise_s: float
    predicted_program_s: float
    predicted_sum_s: float
    provenance: _model_pb2.Provenance
    role: str
    shape: LayerShape
    stats: TimingStats
    sum_of_parts_reason: str
    tflops: float
    time_s: float
    def __init__(self, shape: _Optional[_Union[LayerShape, _Mapping]] = ..., key: _Optional[str] = ..., time_s: _Optional[float] = ..., flops: _Optional[float] = ..., tflops: _Optional[float] = ..., stats: _Optional[_Union[TimingStats, _Mapping]] = ..., provenance: _Optional[_Union[_model_pb2.Provenance, _Mapping]] = ..., index: _Optional[int] = ..., predicted_sum_s: _Optional[float] = ..., predicted_elementwise_s: _Optional[float] = ..., model_layers: _Optional[int] = ..., role: _Optional[str] = ..., sum_of_parts_reason: _Optional[str] = ..., predicted_program_s: _Optional[float] = ...) -> None: ...

class LayoutOption(_message.Message):
    __slots__ = ["rank", "step", "why"]
    RANK_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    rank: int
    step: StepBreakdown
    why: str
    def __init__(self, rank: _Optional[int] = ..., step: _Optional[_Union[StepBreakdown, _Mapping]] = ..., why: _Optional[str] = ...) -> None: ...

class ListDevicesRequest(_message.Message):
    __slots__ = ["include_internal"]
    INCLUDE_INTERNAL_FIELD_NUMBER: _ClassVar[int]
    include_internal: bool
    def __init__(self, include_internal: bool = ...) -> None: ...

class ListDevicesResponse(_message.Message):
    __slots__ = ["cache_entries", "catalog", "has_cache", "workers"]
    CACHE_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    CATALOG_FIELD_NUMBER: _ClassVar[int]
    HAS_CACHE_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    cache_entries: int
    catalog: _containers.RepeatedCompositeFieldContainer[CatalogGpu]
    has_cache: bool
    workers: _containers.RepeatedCompositeFieldContainer[WorkerDevice]
    def __init__(self, workers: _Optional[_Iterable[_Union[WorkerDevice, _Mapping]]] = ..., catalog: _Optional[_Iterable[_Union[CatalogGpu, _Mapping]]] = ..., cache_entries: _Optional[int] = ..., has_cache: bool = ...) -> None: ...

class ListModelsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListModelsResponse(_message.Message):
    __slots__ = ["models"]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[ExampleModel]
    def __init__(self, models: _Optional[_Iterable[_Union[ExampleModel, _Mapping]]] = ...) -> None: ...

class MeasuredStep(_message.Message):
    __slots__ = ["layer", "measured_share", "mfu", "step_time_s", "tokens_per_second_per_gpu"]
    LAYER_FIELD_NUMBER: _ClassVar[int]
    MEASURED_SHARE_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_S_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_SECOND_PER_GPU_FIELD_NUMBER: _ClassVar[int]
    layer: LayerTiming
    measured_share: float
    mfu: float
    step_time_s: float
    tokens_per_second_per_gpu: float
    def __init__(self, layer: _Optional[_Union[LayerTiming, _Mapping]] = ..., step_time_s: _Optional[float] = ..., measured_share: _Optional[float] = ..., mfu: _Optional[float] = ..., tokens_per_second_per_gpu: _Optional[float] = ...) -> None: ...

class MemoryEstimate(_message.Message):
    __slots__ = ["activations_bytes", "activations_full_recompute_bytes", "capacity_bytes", "fits", "fits_with_recompute", "gathered_bytes", "gradients_bytes", "host_capacity_bytes", "kv_cache_bytes", "offloaded_bytes", "optimizer_bytes", "stage", "stored_bytes_per_layer", "total_bytes", "total_full_recompute_bytes", "weights_bytes"]
    ACTIVATIONS_BYTES_FIELD_NUMBER: _ClassVar[int]
    ACTIVATIONS_FULL_RECOMPUTE_BYTES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    FITS_FIELD_NUMBER: _ClassVar[int]
    FITS_WITH_RECOMPUTE_FIELD_NUMBER: _ClassVar[int]
    GATHERED_BYTES_FIELD_NUMBER: _ClassVar[int]
    GRADIENTS_BYTES_FIELD_NUMBER: _ClassVar[int]
    HOST_CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    KV_CACHE_BYTES_FIELD_NUMBER: _ClassVar[int]
    OFFLOADED_BYTES_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_BYTES_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    STORED_BYTES_PER_LAYER_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FULL_RECOMPUTE_BYTES_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_BYTES_FIELD_NUMBER: _ClassVar[int]
    activations_bytes: float
    activations_full_recompute_bytes: float
    capacity_bytes: float
    fits: bool
    fits_with_recompute: bool
    gathered_bytes: float
    gradients_bytes: float
    host_capacity_bytes: float
    kv_cache_bytes: float
    offloaded_bytes: float
    optimizer_bytes: float
    stage: int
    stored_bytes_per_layer: float
    total_bytes: float
    total_full_recompute_bytes: float
    weights_bytes: float
    def __init__(self, weights_bytes: _Optional[float] = ..., gradients_bytes: _Optional[float] = ..., optimizer_bytes: _Optional[float] = ..., activations_bytes: _Optional[float] = ..., activations_full_recompute_bytes: _Optional[float] = ..., kv_cache_bytes: _Optional[float] = ..., total_bytes: _Optional[float] = ..., total_full_recompute_bytes: _Optional[float] = ..., capacity_bytes: _Optional[float] = ..., fits: bool = ..., fits_with_recompute: bool = ..., offloaded_bytes: _Optional[float] = ..., gathered_bytes: _Optional[float] = ..., stored_bytes_per_layer: _Optional[float] = ..., stage: _Optional[int] = ..., host_capacity_bytes: _Optional[float] = ...) -> None: ...

class ParameterCounts(_message.Message):
    __slots__ = ["active_params", "embedding_params", "non_embedding_params", "per_layer_params", "total_params"]
    ACTIVE_PARAMS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_PARAMS_FIELD_NUMBER: _ClassVar[int]
    NON_EMBEDDING_PARAMS_FIELD_NUMBER: _ClassVar[int]
    PER_LAYER_PARAMS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PARAMS_FIELD_NUMBER: _ClassVar[int]
    active_params: int
    embedding_params: int
    non_embedding_params: int
    per_layer_params: int
    total_params: int
    def __init__(self, total_params: _Optional[int] = ..., per_layer_params: _Optional[int] = ..., embedding_params: _Optional[int] = ..., non_embedding_params: _Optional[int] = ..., active_params: _Optional[int] = ...) -> None: ...

class ParseModelRequest(_message.Message):
    __slots__ = ["text"]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ParseModelResponse(_message.Message):
    __slots__ = ["model"]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    model: _model_pb2.ModelSpec
    def __init__(self, model: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ["done", "message", "total"]
    DONE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    done: int
    message: str
    total: int
    def __init__(self, done: _Optional[int] = ..., total: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class RecalibrateRequest(_message.Message):
    __slots__ = ["gpu", "min_rows"]
    GPU_FIELD_NUMBER: _ClassVar[int]
    MIN_ROWS_FIELD_NUMBER: _ClassVar[int]
    gpu: str
    min_rows: int
    def __init__(self, gpu: _Optional[str] = ..., min_rows: _Optional[int] = ...) -> None: ...

class RecalibrateResponse(_message.Message):
    __slots__ = ["calibration_version", "results"]
    CALIBRATION_VERSION_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    calibration_version: int
    results: _containers.RepeatedCompositeFieldContainer[RecalibrationResult]
    def __init__(self, results: _Optional[_Iterable[_Union[RecalibrationResult, _Mapping]]] = ..., calibration_version: _Optional[int] = ...) -> None: ...

class RecalibrationResult(_message.Message):
    __slots__ = ["applied", "cv_median_error", "cv_p90_error", "dtype", "gpu", "label", "reason", "rows"]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    CV_MEDIAN_ERROR_FIELD_NUMBER: _ClassVar[int]
    CV_P90_ERROR_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    cv_median_error: float
    cv_p90_error: float
    dtype: _model_pb2.Dtype
    gpu: str
    label: str
    reason: str
    rows: int
    def __init__(self, gpu: _Optional[str] = ..., dtype: _Optional[_Union[_model_pb2.Dtype, str]] = ..., rows: _Optional[int] = ..., applied: bool = ..., cv_median_error: _Optional[float] = ..., cv_p90_error: _Optional[float] = ..., label: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RecommendRequest(_message.Message):
    __slots__ = ["allow_kv_replication", "allowed_head_dims", "gpu", "head_dim_multiple", "hf_config_json", "keep_layers", "kv_heads_divisible_by_tp", "max_candidates", "max_gpu_seconds", "max_heads", "measure_top_k", "min_heads", "mode", "model", "param_tolerance", "tensor_parallel_options", "top", "vary"]
    ALLOWED_HEAD_DIMS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_KV_REPLICATION_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    HEAD_DIM_MULTIPLE_FIELD_NUMBER: _ClassVar[int]
    HF_CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    KEEP_LAYERS_FIELD_NUMBER: _ClassVar[int]
    KV_HEADS_DIVISIBLE_BY_TP_FIELD_NUMBER: _ClassVar[int]
    MAX_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    MAX_GPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MAX_HEADS_FIELD_NUMBER: _ClassVar[int]
    MEASURE_TOP_K_FIELD_NUMBER: _ClassVar[int]
    MIN_HEADS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    PARAM_TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PARALLEL_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    TOP_FIELD_NUMBER: _ClassVar[int]
    VARY_FIELD_NUMBER: _ClassVar[int]
    allow_kv_replication: bool
    allowed_head_dims: _containers.RepeatedScalarFieldContainer[int]
    gpu: str
    head_dim_multiple: int
    hf_config_json: str
    keep_layers: bool
    kv_heads_divisible_by_tp: bool
    max_candidates: int
    max_gpu_seconds: float
    max_heads: int
    measure_top_k: int
    min_heads: int
    mode: Mode
    model: _model_pb2.ModelSpec
    param_tolerance: float
    tensor_parallel_options: _containers.RepeatedScalarFieldContainer[int]
    top: int
    vary: _containers.RepeatedScalarFieldContainer[Knob]
    def __init__(self, model: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., gpu: _Optional[str] = ..., mode: _Optional[_Union[Mode, str]] = ..., param_tolerance: _Optional[float] = ..., vary: _Optional[_Iterable[_Union[Knob, str]]] = ..., allowed_head_dims: _Optional[_Iterable[int]] = ..., min_heads: _Optional[int] = ..., max_heads: _Optional[int] = ..., keep_layers: bool = ..., max_candidates: _Optional[int] = ..., max_gpu_seconds: _Optional[float] = ..., top: _Optional[int] = ..., measure_top_k: _Optional[int] = ..., tensor_parallel_options: _Optional[_Iterable[int]] = ..., hf_config_json: _Optional[str] = ..., allow_kv_replication: bool = ..., head_dim_multiple: _Optional[int] = ..., kv_heads_divisible_by_tp: bool = ...) -> None: ...

class RecommendResponse(_message.Message):
    __slots__ = ["assumed", "candidates", "candidates_considered", "done", "gemms_cached", "gemms_measured", "gemms_predicted", "gpu", "held", "layers_cached", "layers_measured", "layers_predicted", "mode", "notes", "progress", "refusals", "shapes_examined", "speedup_basis", "tensor_parallel_degrees", "tensor_parallel_source", "verdict", "verdict_reason"]
    ASSUMED_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_CONSIDERED_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    GEMMS_CACHED_FIELD_NUMBER: _ClassVar[int]
    GEMMS_MEASURED_FIELD_NUMBER: _ClassVar[int]
    GEMMS_PREDICTED_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    LAYERS_CACHED_FIELD_NUMBER: _ClassVar[int]
    LAYERS_MEASURED_FIELD_NUMBER: _ClassVar[int]
    LAYERS_PREDICTED_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    REFUSALS_FIELD_NUMBER: _ClassVar[int]
    SHAPES_EXAMINED_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_BASIS_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PARALLEL_DEGREES_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PARALLEL_SOURCE_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    VERDICT_REASON_FIELD_NUMBER: _ClassVar[int]
    assumed: Assumed
    candidates: _containers.RepeatedCompositeFieldContainer[Candidate]
    candidates_considered: int
    done: bool
    gemms_cached: int
    gemms_measured: int
    gemms_predicted: int
    gpu: str
    held: _containers.RepeatedCompositeFieldContainer[HeldProperty]
    layers_cached: int
    layers_measured: int
    layers_predicted: int
    mode: Mode
    notes: _containers.RepeatedScalarFieldContainer[str]
    progress: Progress
    refusals: _containers.RepeatedCompositeFieldContainer[Refusal]
    shapes_examined: int
    speedup_basis: str
    tensor_parallel_degrees: _containers.RepeatedScalarFieldContainer[int]
    tensor_parallel_source: str
    verdict: Verdict
    verdict_reason: str
    def __init__(self, progress: _Optional[_Union[Progress, _Mapping]] = ..., done: bool = ..., candidates: _Optional[_Iterable[_Union[Candidate, _Mapping]]] = ..., candidates_considered: _Optional[int] = ..., gemms_measured: _Optional[int] = ..., gemms_cached: _Optional[int] = ..., gemms_predicted: _Optional[int] = ..., gpu: _Optional[str] = ..., mode: _Optional[_Union[Mode, str]] = ..., notes: _Optional[_Iterable[str]] = ..., layers_measured: _Optional[int] = ..., layers_cached: _Optional[int] = ..., layers_predicted: _Optional[int] = ..., verdict: _Optional[_Union[Verdict, str]] = ..., verdict_reason: _Optional[str] = ..., refusals: _Optional[_Iterable[_Union[Refusal, _Mapping]]] = ..., tensor_parallel_degrees: _Optional[_Iterable[int]] = ..., tensor_parallel_source: _Optional[str] = ..., speedup_basis: _Optional[str] = ..., shapes_examined: _Optional[int] = ..., held: _Optional[_Iterable[_Union[HeldProperty, _Mapping]]] = ..., assumed: _Optional[_Union[Assumed, _Mapping]] = ...) -> None: ...

class Refusal(_message.Message):
    __slots__ = ["count", "description", "loosen_with", "rule", "unit"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    LOOSEN_WITH_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    count: int
    description: str
    loosen_with: str
    rule: str
    unit: str
    def __init__(self, rule: _Optional[str] = ..., count: _Optional[int] = ..., unit: _Optional[str] = ..., description: _Optional[str] = ..., loosen_with: _Optional[str] = ...) -> None: ...

class RuleViolation(_message.Message):
    __slots__ = ["hurts", "id", "message", "paper_rule", "priced"]
    HURTS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PAPER_RULE_FIELD_NUMBER: _ClassVar[int]
    PRICED_FIELD_NUMBER: _ClassVar[int]
    hurts: _containers.RepeatedScalarFieldContainer[str]
    id: str
    message: str
    paper_rule: int
    priced: bool
    def __init__(self, id: _Optional[str] = ..., paper_rule: _Optional[int] = ..., message: _Optional[str] = ..., hurts: _Optional[_Iterable[str]] = ..., priced: bool = ...) -> None: ...

class RunConfig(_message.Message):
    __slots__ = ["cp_ring", "dp_overlap", "eager", "ep_dispatcher", "ep_overlap", "fp8_param_gather", "fp8_recipe", "fsdp_shard", "global_batch", "gradient_bytes", "interleave", "keep_degrees", "loss", "moe_host_s", "moe_unfused_ops", "mtp_layers", "network", "no_pp_overlap", "no_reshard_after_forward", "no_zero3_prefetch", "num_gpus", "offload_activations", "overlap_grad_reduce", "plan", "recompute", "recompute_mla_up_proj", "recompute_moe", "rope_unfused", "sequence_parallel", "sustained_gemm_stretch", "tp_overlap", "train_tokens", "zero3_prefetch", "zero_stage"]
    CP_RING_FIELD_NUMBER: _ClassVar[int]
    DP_OVERLAP_FIELD_NUMBER: _ClassVar[int]
    EAGER_FIELD_NUMBER: _ClassVar[int]
    EP_DISPATCHER_FIELD_NUMBER: _ClassVar[int]
    EP_OVERLAP_FIELD_NUMBER: _ClassVar[int]
    FP8_PARAM_GATHER_FIELD_NUMBER: _ClassVar[int]
    FP8_RECIPE_FIELD_NUMBER: _ClassVar[int]
    FSDP_SHARD_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_BATCH_FIELD_NUMBER: _ClassVar[int]
    GRADIENT_BYTES_FIELD_NUMBER: _ClassVar[int]
    INTERLEAVE_FIELD_NUMBER: _ClassVar[int]
    KEEP_DEGREES_FIELD_NUMBER: _ClassVar[int]
    LOSS_FIELD_NUMBER: _ClassVar[int]
    MOE_HOST_S_FIELD_NUMBER: _ClassVar[int]
    MOE_UNFUSED_OPS_FIELD_NUMBER: _ClassVar[int]
    MTP_LAYERS_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    NO_PP_OVERLAP_FIELD_NUMBER: _ClassVar[int]
    NO_RESHARD_AFTER_FORWARD_FIELD_NUMBER: _ClassVar[int]
    NO_ZERO3_PREFETCH_FIELD_NUMBER: _ClassVar[int]
    NUM_GPUS_FIELD_NUMBER: _ClassVar[int]
    OFFLOAD_ACTIVATIONS_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_GRAD_REDUCE_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_MLA_UP_PROJ_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_MOE_FIELD_NUMBER: _ClassVar[int]
    ROPE_UNFUSED_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    SUSTAINED_GEMM_STRETCH_FIELD_NUMBER: _ClassVar[int]
    TP_OVERLAP_FIELD_NUMBER: _ClassVar[int]
    TRAIN_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ZERO3_PREFETCH_FIELD_NUMBER: _ClassVar[int]
    ZERO_STAGE_FIELD_NUMBER: _ClassVar[int]
    cp_ring: str
    dp_overlap: float
    eager: bool
    ep_dispatcher: str
    ep_overlap: bool
    fp8_param_gather: bool
    fp8_recipe: str
    fsdp_shard: int
    global_batch: int
    gradient_bytes: int
    interleave: int
    keep_degrees: bool
    loss: str
    moe_host_s: float
    moe_unfused_ops: bool
    mtp_layers: int
    network: str
    no_pp_overlap: bool
    no_reshard_after_forward: bool
    no_zero3_prefetch: bool
    num_gpus: int
    offload_activations: bool
    overlap_grad_reduce: bool
    plan: bool
    recompute: Recompute
    recompute_mla_up_proj: bool
    recompute_moe: bool
    rope_unfused: bool
    sequence_parallel: bool
    sustained_gemm_stretch: float
    tp_overlap: float
    train_tokens: float
    zero3_prefetch: bool
    zero_stage: int
    def __init__(self, num_gpus: _Optional[int] = ..., global_batch: _Optional[int] = ..., interleave: _Optional[int] = ..., sequence_parallel: bool = ..., recompute: _Optional[_Union[Recompute, str]] = ..., dp_overlap: _Optional[float] = ..., zero_stage: _Optional[int] = ..., plan: bool = ..., offload_activations: bool = ..., gradient_bytes: _Optional[int] = ..., no_zero3_prefetch: bool = ..., tp_overlap: _Optional[float] = ..., no_pp_overlap: bool = ..., network: _Optional[str] = ..., overlap_grad_reduce: bool = ..., zero3_prefetch: bool = ..., ep_overlap: bool = ..., ep_dispatcher: _Optional[str] = ..., fp8_param_gather: bool = ..., moe_host_s: _Optional[float] = ..., no_reshard_after_forward: bool = ..., keep_degrees: bool = ..., train_tokens: _Optional[float] = ..., eager: bool = ..., fsdp_shard: _Optional[int] = ..., moe_unfused_ops: bool = ..., mtp_layers: _Optional[int] = ..., recompute_moe: bool = ..., recompute_mla_up_proj: bool = ..., sustained_gemm_stretch: _Optional[float] = ..., fp8_recipe: _Optional[str] = ..., loss: _Optional[str] = ..., rope_unfused: bool = ..., cp_ring: _Optional[str] = ...) -> None: ...

class StepBreakdown(_message.Message):
    __slots__ = ["assumptions", "compute_s", "context_parallel", "cp_comm_s", "data_parallel", "dp_comm_s", "ep_comm_s", "error_band_gpu_checked", "error_band_gpus", "error_band_kind", "error_band_p10", "error_band_p90", "error_band_runs", "expert_parallel", "global_batch", "gpu_hours", "gpus", "interleave", "memory", "mfu", "mfu_other_count", "micro_batch_size", "microbatches", "moe_host_s", "nodes", "offload_activations", "offload_s", "optimizer_s", "pipeline_parallel", "pp_bubble_s", "pp_comm_s", "recompute", "recompute_mla_up_proj", "recompute_s", "sequence_parallel", "step_time_s", "tensor_parallel", "tflops_per_gpu", "time_to_train_s", "tokens_per_second_per_gpu", "tokens_per_step", "tp_comm_s", "train_tokens", "zero_stage"]
    ASSUMPTIONS_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_S_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    CP_COMM_S_FIELD_NUMBER: _ClassVar[int]
    DATA_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    DP_COMM_S_FIELD_NUMBER: _ClassVar[int]
    EP_COMM_S_FIELD_NUMBER: _ClassVar[int]
    ERROR_BAND_GPUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_BAND_GPU_CHECKED_FIELD_NUMBER: _ClassVar[int]
    ERROR_BAND_KIND_FIELD_NUMBER: _ClassVar[int]
    ERROR_BAND_P10_FIELD_NUMBER: _ClassVar[int]
    ERROR_BAND_P90_FIELD_NUMBER: _ClassVar[int]
    ERROR_BAND_RUNS_FIELD_NUMBER: _ClassVar[int]
    EXPERT_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_BATCH_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_HOURS_FIELD_NUMBER: _ClassVar[int]
    INTERLEAVE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    MFU_OTHER_COUNT_FIELD_NUMBER: _ClassVar[int]
    MICROBATCHES_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    MOE_HOST_S_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    OFFLOAD_ACTIVATIONS_FIELD_NUMBER: _ClassVar[int]
    OFFLOAD_S_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_S_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    PP_BUBBLE_S_FIELD_NUMBER: _ClassVar[int]
    PP_COMM_S_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_MLA_UP_PROJ_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_S_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_S_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    TFLOPS_PER_GPU_FIELD_NUMBER: _ClassVar[int]
    TIME_TO_TRAIN_S_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_SECOND_PER_GPU_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    TP_COMM_S_FIELD_NUMBER: _ClassVar[int]
    TRAIN_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ZERO_STAGE_FIELD_NUMBER: _ClassVar[int]
    assumptions: _containers.RepeatedScalarFieldContainer[str]
    compute_s: float
    context_parallel: int
    cp_comm_s: float
    data_parallel: int
    dp_comm_s: float
    ep_comm_s: float
    error_band_gpu_checked: bool
    error_band_gpus: _containers.RepeatedScalarFieldContainer[str]
    error_band_kind: str
    error_band_p10: float
    error_band_p90: float
    error_band_runs: int
    expert_parallel: int
    global_batch: int
    gpu_hours: float
    gpus: int
    interleave: int
    memory: MemoryEstimate
    mfu: float
    mfu_other_count: float
    micro_batch_size: int
    microbatches: int
    moe_host_s: float
    nodes: int
    offload_activations: bool
    offload_s: float
    optimizer_s: float
    pipeline_parallel: int
    pp_bubble_s: float
    pp_comm_s: float
    recompute: Recompute
    recompute_mla_up_proj: bool
    recompute_s: float
    sequence_parallel: bool
    step_time_s: float
    tensor_parallel: int
    tflops_per_gpu: float
    time_to_train_s: float
    tokens_per_second_per_gpu: float
    tokens_per_step: int
    tp_comm_s: float
    train_tokens: float
    zero_stage: int
    def __init__(self, gpus: _Optional[int] = ..., nodes: _Optional[int] = ..., tensor_parallel: _Optional[int] = ..., pipeline_parallel: _Optional[int] = ..., data_parallel: _Optional[int] = ..., microbatches: _Optional[int] = ..., global_batch: _Optional[int] = ..., compute_s: _Optional[float] = ..., recompute_s: _Optional[float] = ..., tp_comm_s: _Optional[float] = ..., pp_bubble_s: _Optional[float] = ..., pp_comm_s: _Optional[float] = ..., dp_comm_s: _Optional[float] = ..., optimizer_s: _Optional[float] = ..., step_time_s: _Optional[float] = ..., mfu: _Optional[float] = ..., tokens_per_second_per_gpu: _Optional[float] = ..., assumptions: _Optional[_Iterable[str]] = ..., memory: _Optional[_Union[MemoryEstimate, _Mapping]] = ..., sequence_parallel: bool = ..., recompute: _Optional[_Union[Recompute, str]] = ..., zero_stage: _Optional[int] = ..., offload_activations: bool = ..., recompute_mla_up_proj: bool = ..., cp_comm_s: _Optional[float] = ..., offload_s: _Optional[float] = ..., context_parallel: _Optional[int] = ..., ep_comm_s: _Optional[float] = ..., expert_parallel: _Optional[int] = ..., error_band_p10: _Optional[float] = ..., error_band_p90: _Optional[float] = ..., error_band_kind: _Optional[str] = ..., error_band_runs: _Optional[int] = ..., interleave: _Optional[int] = ..., micro_batch_size: _Optional[int] = ..., tflops_per_gpu: _Optional[float] = ..., moe_host_s: _Optional[float] = ..., train_tokens: _Optional[float] = ..., time_to_train_s: _Optional[float] = ..., gpu_hours: _Optional[float] = ..., error_band_gpus: _Optional[_Iterable[str]] = ..., error_band_gpu_checked: bool = ..., mfu_other_count: _Optional[float] = ..., tokens_per_step: _Optional[int] = ...) -> None: ...

class SweepPoint(_message.Message):
    __slots__ = ["error_band_p10", "error_band_p90", "invalid_reason", "mfu", "rules_broken", "source", "tflops", "time_s", "tokens_per_second_per_gpu", "total_params", "valid", "value"]
    ERROR_BAND_P10_FIELD_NUMBER: _ClassVar[int]
    ERROR_BAND_P90_FIELD_NUMBER: _ClassVar[int]
    INVALID_REASON_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    RULES_BROKEN_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TFLOPS_FIELD_NUMBER: _ClassVar[int]
    TIME_S_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_SECOND_PER_GPU_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PARAMS_FIELD_NUMBER: _ClassVar[int]
    VALID_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    error_band_p10: float
    error_band_p90: float
    invalid_reason: str
    mfu: float
    rules_broken: _containers.RepeatedScalarFieldContainer[str]
    source: _model_pb2.Source
    tflops: float
    time_s: float
    tokens_per_second_per_gpu: float
    total_params: int
    valid: bool
    value: int
    def __init__(self, value: _Optional[int] = ..., valid: bool = ..., invalid_reason: _Optional[str] = ..., time_s: _Optional[float] = ..., tflops: _Optional[float] = ..., mfu: _Optional[float] = ..., tokens_per_second_per_gpu: _Optional[float] = ..., total_params: _Optional[int] = ..., rules_broken: _Optional[_Iterable[str]] = ..., source: _Optional[_Union[_model_pb2.Source, str]] = ..., error_band_p10: _Optional[float] = ..., error_band_p90: _Optional[float] = ...) -> None: ...

class SweepRequest(_message.Message):
    __slots__ = ["dtype", "gemm", "gpu", "hf_config_json", "layout", "max_gpu_seconds", "mode", "model", "step", "to", "vary"]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    GEMM_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    HF_CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    MAX_GPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    VARY_FIELD_NUMBER: _ClassVar[int]
    dtype: _model_pb2.Dtype
    gemm: _model_pb2.GemmShape
    gpu: str
    hf_config_json: str
    layout: _model_pb2.Layout
    max_gpu_seconds: float
    mode: Mode
    model: _model_pb2.ModelSpec
    step: int
    to: int
    vary: SweepDimension
    def __init__(self, model: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., gemm: _Optional[_Union[_model_pb2.GemmShape, _Mapping]] = ..., layout: _Optional[_Union[_model_pb2.Layout, str]] = ..., dtype: _Optional[_Union[_model_pb2.Dtype, str]] = ..., gpu: _Optional[str] = ..., vary: _Optional[_Union[SweepDimension, str]] = ..., to: _Optional[int] = ..., step: _Optional[int] = ..., mode: _Optional[_Union[Mode, str]] = ..., max_gpu_seconds: _Optional[float] = ..., hf_config_json: _Optional[str] = ..., **kwargs) -> None: ...

class SweepResponse(_message.Message):
    __slots__ = ["assumed", "done", "gemms_cached", "gemms_measured", "gemms_predicted", "gpu", "mode", "notes", "points", "progress", "vary"]
    ASSUMED_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    GEMMS_CACHED_FIELD_NUMBER: _ClassVar[int]
    GEMMS_MEASURED_FIELD_NUMBER: _ClassVar[int]
    GEMMS_PREDICTED_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    VARY_FIELD_NUMBER: _ClassVar[int]
    assumed: Assumed
    done: bool
    gemms_cached: int
    gemms_measured: int
    gemms_predicted: int
    gpu: str
    mode: Mode
    notes: _containers.RepeatedScalarFieldContainer[str]
    points: _containers.RepeatedCompositeFieldContainer[SweepPoint]
    progress: Progress
    vary: SweepDimension
    def __init__(self, progress: _Optional[_Union[Progress, _Mapping]] = ..., done: bool = ..., points: _Optional[_Iterable[_Union[SweepPoint, _Mapping]]] = ..., gpu: _Optional[str] = ..., vary: _Optional[_Union[SweepDimension, str]] = ..., mode: _Optional[_Union[Mode, str]] = ..., gemms_measured: _Optional[int] = ..., gemms_cached: _Optional[int] = ..., gemms_predicted: _Optional[int] = ..., notes: _Optional[_Iterable[str]] = ..., assumed: _Optional[_Union[Assumed, _Mapping]] = ...) -> None: ...

class TileChoice(_message.Message):
    __slots__ = ["alignment_efficiency", "split_k", "tile_efficiency", "tile_m", "tile_n", "tiles", "wave_efficiency", "waves"]
    ALIGNMENT_EFFICIENCY_FIELD_NUMBER: _ClassVar[int]
    SPLIT_K_FIELD_NUMBER: _ClassVar[int]
    TILES_FIELD_NUMBER: _ClassVar[int]
    TILE_EFFICIENCY_FIELD_NUMBER: _ClassVar[int]
    TILE_M_FIELD_NUMBER: _ClassVar[int]
    TILE_N_FIELD_NUMBER: _ClassVar[int]
    WAVES_FIELD_NUMBER: _ClassVar[int]
    WAVE_EFFICIENCY_FIELD_NUMBER: _ClassVar[int]
    alignment_efficiency: float
    split_k: int
    tile_efficiency: float
    tile_m: int
    tile_n: int
    tiles: int
    wave_efficiency: float
    waves: int
    def __init__(self, tile_m: _Optional[int] = ..., tile_n: _Optional[int] = ..., split_k: _Optional[int] = ..., tiles: _Optional[int] = ..., waves: _Optional[int] = ..., tile_efficiency: _Optional[float] = ..., wave_efficiency: _Optional[float] = ..., alignment_efficiency: _Optional[float] = ...) -> None: ...

class TimeGemmsRequest(_message.Message):
    __slots__ = ["autotune", "dtype", "gemms", "gpu", "hf_config_json", "layout", "mode", "model", "warm_l2"]
    AUTOTUNE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    GEMMS_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    HF_CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    WARM_L2_FIELD_NUMBER: _ClassVar[int]
    autotune: bool
    dtype: _model_pb2.Dtype
    gemms: _containers.RepeatedCompositeFieldContainer[_model_pb2.GemmShape]
    gpu: str
    hf_config_json: str
    layout: _model_pb2.Layout
    mode: Mode
    model: _model_pb2.ModelSpec
    warm_l2: bool
    def __init__(self, gpu: _Optional[str] = ..., gemms: _Optional[_Iterable[_Union[_model_pb2.GemmShape, _Mapping]]] = ..., dtype: _Optional[_Union[_model_pb2.Dtype, str]] = ..., layout: _Optional[_Union[_model_pb2.Layout, str]] = ..., mode: _Optional[_Union[Mode, str]] = ..., autotune: bool = ..., model: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., warm_l2: bool = ..., hf_config_json: _Optional[str] = ...) -> None: ...

class TimeGemmsResponse(_message.Message):
    __slots__ = ["progress", "timing"]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    progress: Progress
    timing: GemmTiming
    def __init__(self, progress: _Optional[_Union[Progress, _Mapping]] = ..., timing: _Optional[_Union[GemmTiming, _Mapping]] = ...) -> None: ...

class TimeLayersRequest(_message.Message):
    __slots__ = ["gpu", "hf_config_json", "kinds", "mode", "model", "routing", "warm_l2"]
    GPU_FIELD_NUMBER: _ClassVar[int]
    HF_CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    WARM_L2_FIELD_NUMBER: _ClassVar[int]
    gpu: str
    hf_config_json: str
    kinds: _containers.RepeatedScalarFieldContainer[LayerKind]
    mode: Mode
    model: _model_pb2.ModelSpec
    routing: str
    warm_l2: bool
    def __init__(self, gpu: _Optional[str] = ..., model: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., hf_config_json: _Optional[str] = ..., kinds: _Optional[_Iterable[_Union[LayerKind, str]]] = ..., mode: _Optional[_Union[Mode, str]] = ..., warm_l2: bool = ..., routing: _Optional[str] = ...) -> None: ...

class TimeLayersResponse(_message.Message):
    __slots__ = ["notes", "progress", "timing"]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    notes: _containers.RepeatedScalarFieldContainer[str]
    progress: Progress
    timing: LayerTiming
    def __init__(self, progress: _Optional[_Union[Progress, _Mapping]] = ..., timing: _Optional[_Union[LayerTiming, _Mapping]] = ..., notes: _Optional[_Iterable[str]] = ...) -> None: ...

class TimingStats(_message.Message):
    __slots__ = ["algorithm_id", "clock_policy", "clock_source", "clock_states", "cold_l2", "engine", "heuristic_algorithm_id", "heuristic_median_s", "heuristic_waves", "launches_per_sample", "median_s", "p10_s", "p90_s", "relative_spread", "rerun_sigma", "sampled_s", "samples", "sm_clock_mhz", "stop_rule"]
    ALGORITHM_ID_FIELD_NUMBER: _ClassVar[int]
    CLOCK_POLICY_FIELD_NUMBER: _ClassVar[int]
    CLOCK_SOURCE_FIELD_NUMBER: _ClassVar[int]
    CLOCK_STATES_FIELD_NUMBER: _ClassVar[int]
    COLD_L2_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    HEURISTIC_ALGORITHM_ID_FIELD_NUMBER: _ClassVar[int]
    HEURISTIC_MEDIAN_S_FIELD_NUMBER: _ClassVar[int]
    HEURISTIC_WAVES_FIELD_NUMBER: _ClassVar[int]
    LAUNCHES_PER_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    MEDIAN_S_FIELD_NUMBER: _ClassVar[int]
    P10_S_FIELD_NUMBER: _ClassVar[int]
    P90_S_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_SPREAD_FIELD_NUMBER: _ClassVar[int]
    RERUN_SIGMA_FIELD_NUMBER: _ClassVar[int]
    SAMPLED_S_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    SM_CLOCK_MHZ_FIELD_NUMBER: _ClassVar[int]
    STOP_RULE_FIELD_NUMBER: _ClassVar[int]
    algorithm_id: int
    clock_policy: str
    clock_source: str
    clock_states: int
    cold_l2: bool
    engine: str
    heuristic_algorithm_id: int
    heuristic_median_s: float
    heuristic_waves: float
    launches_per_sample: int
    median_s: float
    p10_s: float
    p90_s: float
    relative_spread: float
    rerun_sigma: float
    sampled_s: float
    samples: int
    sm_clock_mhz: int
    stop_rule: str
    def __init__(self, median_s: _Optional[float] = ..., p10_s: _Optional[float] = ..., p90_s: _Optional[float] = ..., samples: _Optional[int] = ..., relative_spread: _Optional[float] = ..., sm_clock_mhz: _Optional[int] = ..., algorithm_id: _Optional[int] = ..., heuristic_waves: _Optional[float] = ..., heuristic_median_s: _Optional[float] = ..., launches_per_sample: _Optional[int] = ..., cold_l2: bool = ..., heuristic_algorithm_id: _Optional[int] = ..., engine: _Optional[str] = ..., sampled_s: _Optional[float] = ..., clock_source: _Optional[str] = ..., stop_rule: _Optional[str] = ..., clock_states: _Optional[int] = ..., clock_policy: _Optional[str] = ..., rerun_sigma: _Optional[float] = ...) -> None: ...

class WorkerDevice(_message.Message):
    __slots__ = ["address", "device", "id", "last_restart_reason", "pid", "restarts", "up"]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LAST_RESTART_REASON_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    UP_FIELD_NUMBER: _ClassVar[int]
    address: str
    device: _model_pb2.DeviceFingerprint
    id: str
    last_restart_reason: str
    pid: int
    restarts: int
    up: bool
    def __init__(self, id: _Optional[str] = ..., address: _Optional[str] = ..., device: _Optional[_Union[_model_pb2.DeviceFingerprint, _Mapping]] = ..., up: bool = ..., restarts: _Optional[int] = ..., pid: _Optional[int] = ..., last_restart_reason: _Optional[str] = ...) -> None: ...

class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Bound(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Recompute(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class LayerKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Knob(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Verdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SweepDimension(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
