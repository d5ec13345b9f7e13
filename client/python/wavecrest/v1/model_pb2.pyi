from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

ATTENTION_FLASH: Attention
ATTENTION_FLASH1: Attention
ATTENTION_FLASH1_TRITON: Attention
ATTENTION_FLASH2: Attention
ATTENTION_UNFUSED: Attention
ATTENTION_UNSPECIFIED: Attention
BIAS_ALL: Bias
BIAS_NONE: Bias
BIAS_QKV: Bias
BIAS_UNSPECIFIED: Bias
DESCRIPTOR: _descriptor.FileDescriptor
DTYPE_BF16: Dtype
DTYPE_FP16: Dtype
DTYPE_FP32: Dtype
DTYPE_FP8_E4M3: Dtype
DTYPE_TF32: Dtype
DTYPE_UNSPECIFIED: Dtype
LAYOUT_NN: Layout
LAYOUT_NT: Layout
LAYOUT_TN: Layout
LAYOUT_UNSPECIFIED: Layout
MLP_GELU: Mlp
MLP_SWIGLU: Mlp
MLP_UNSPECIFIED: Mlp
NORM_LAYERNORM: Norm
NORM_RMSNORM: Norm
NORM_UNSPECIFIED: Norm
PASS_BACKWARD: Pass
PASS_DGRAD: Pass
PASS_FORWARD: Pass
PASS_UNSPECIFIED: Pass
PASS_WGRAD: Pass
SOURCE_CACHED: Source
SOURCE_MEASURED: Source
SOURCE_PREDICTED: Source
SOURCE_UNSPECIFIED: Source
STORAGE_FATE_NOT_STORED: StorageFate
STORAGE_FATE_SPOOLED: StorageFate
STORAGE_FATE_STORED: StorageFate
STORAGE_FATE_UNSPECIFIED: StorageFate
WORKLOAD_DECODE: Workload
WORKLOAD_PREFILL: Workload
WORKLOAD_TRAINING: Workload
WORKLOAD_UNSPECIFIED: Workload

class DeviceFingerprint(_message.Message):
    __slots__ = ["backend", "catalog_name", "compute_capability", "cublaslt_version", "cuda_runtime_version", "cudnn_version", "driver_version", "l2_bytes", "max_sm_clock_mhz", "memory_bytes", "name", "sm_count"]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    CATALOG_NAME_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    CUBLASLT_VERSION_FIELD_NUMBER: _ClassVar[int]
    CUDA_RUNTIME_VERSION_FIELD_NUMBER: _ClassVar[int]
    CUDNN_VERSION_FIELD_NUMBER: _ClassVar[int]
    DRIVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    L2_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_SM_CLOCK_MHZ_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SM_COUNT_FIELD_NUMBER: _ClassVar[int]
    backend: str
    catalog_name: str
    compute_capability: int
    cublaslt_version: str
    cuda_runtime_version: str
    cudnn_version: str
    driver_version: str
    l2_bytes: int
    max_sm_clock_mhz: int
    memory_bytes: int
    name: str
    sm_count: int
    def __init__(self, name: _Optional[str] = ..., compute_capability: _Optional[int] = ..., sm_count: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., l2_bytes: _Optional[int] = ..., max_sm_clock_mhz: _Optional[int] = ..., driver_version: _Optional[str] = ..., cuda_runtime_version: _Optional[str] = ..., cublaslt_version: _Optional[str] = ..., backend: _Optional[str] = ..., catalog_name: _Optional[str] = ..., cudnn_version: _Optional[str] = ...) -> None: ...

class GemmReport(_message.Message):
    __slots__ = ["count", "dtype", "flops", "fused_attention", "layout", "name", "shape"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    FLOPS_FIELD_NUMBER: _ClassVar[int]
    FUSED_ATTENTION_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PASS_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    count: int
    dtype: Dtype
    flops: float
    fused_attention: bool
    layout: Layout
    name: str
    shape: GemmShape
    def __init__(self, name: _Optional[str] = ..., shape: _Optional[_Union[GemmShape, _Mapping]] = ..., layout: _Optional[_Union[Layout, str]] = ..., dtype: _Optional[_Union[Dtype, str]] = ..., flops: _Optional[float] = ..., count: _Optional[int] = ..., fused_attention: bool = ..., **kwargs) -> None: ...

class GemmShape(_message.Message):
    __slots__ = ["batch", "k", "m", "n"]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    M_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    batch: int
    k: int
    m: int
    n: int
    def __init__(self, m: _Optional[int] = ..., n: _Optional[int] = ..., k: _Optional[int] = ..., batch: _Optional[int] = ...) -> None: ...

class ModelSpec(_message.Message):
    __slots__ = ["attention", "bias", "context_parallel", "data_parallel", "dense_ffn_hidden_size", "dtype", "expert_groups", "expert_groups_per_token", "expert_parallel", "expert_tensor_parallel", "experts_per_token", "ffn_hidden_size", "first_dense_layers", "fused_gate_up", "glu_clamp", "head_dim", "hidden_size", "hybrid_pattern", "kv_cache_length", "kv_lora_rank", "learned_position_embeddings", "mamba_chunk_size", "mamba_conv_kernel", "mamba_groups", "mamba_head_dim", "mamba_heads", "mamba_state_dim", "micro_batch_size", "mlp", "moe_capacity_factor", "moe_layer_interval", "moe_routing_skew", "mtp_modules", "name", "norm", "num_attention_heads", "num_experts", "num_kv_heads", "num_layers", "pipeline_parallel", "q_lora_rank", "qk_rope_head_dim", "seq_length", "shared_expert_ffn_hidden_size", "shared_expert_gate", "sliding_window", "sliding_window_layers", "tensor_parallel", "tied_embeddings", "v_head_dim", "vocab_size", "workload"]
    ATTENTION_FIELD_NUMBER: _ClassVar[int]
    BIAS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    DATA_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    DENSE_FFN_HIDDEN_SIZE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    EXPERTS_PER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXPERT_GROUPS_FIELD_NUMBER: _ClassVar[int]
    EXPERT_GROUPS_PER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXPERT_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    EXPERT_TENSOR_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    FFN_HIDDEN_SIZE_FIELD_NUMBER: _ClassVar[int]
    FIRST_DENSE_LAYERS_FIELD_NUMBER: _ClassVar[int]
    FUSED_GATE_UP_FIELD_NUMBER: _ClassVar[int]
    GLU_CLAMP_FIELD_NUMBER: _ClassVar[int]
    HEAD_DIM_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_SIZE_FIELD_NUMBER: _ClassVar[int]
    HYBRID_PATTERN_FIELD_NUMBER: _ClassVar[int]
    KV_CACHE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    KV_LORA_RANK_FIELD_NUMBER: _ClassVar[int]
    LEARNED_POSITION_EMBEDDINGS_FIELD_NUMBER: _ClassVar[int]
    MAMBA_CHUNK_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAMBA_CONV_KERNEL_FIELD_NUMBER: _ClassVar[int]
    MAMBA_GROUPS_FIELD_NUMBER: _ClassVar[int]
    MAMBA_HEADS_FIELD_NUMBER: _ClassVar[int]
    MAMBA_HEAD_DIM_FIELD_NUMBER: _ClassVar[int]
    MAMBA_STATE_DIM_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    MLP_FIELD_NUMBER: _ClassVar[int]
    MOE_CAPACITY_FACTOR_FIELD_NUMBER: _ClassVar[int]
    MOE_LAYER_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    MOE_ROUTING_SKEW_FIELD_NUMBER: _ClassVar[int]
    MTP_MODULES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NORM_FIELD_NUMBER: _ClassVar[int]
    NUM_ATTENTION_HEADS_FIELD_NUMBER: _ClassVar[int]
    NUM_EXPERTS_FIELD_NUMBER: _ClassVar[int]
    NUM_KV_HEADS_FIELD_NUMBER: _ClassVar[int]
    NUM_LAYERS_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    QK_ROPE_HEAD_DIM_FIELD_NUMBER: _ClassVar[int]
    Q_LORA_RANK_FIELD_NUMBER: _ClassVar[int]
    SEQ_LENGTH_FIELD_NUMBER: _ClassVar[int]
    SHARED_EXPERT_FFN_HIDDEN_SIZE_FIELD_NUMBER: _ClassVar[int]
    SHARED_EXPERT_GATE_FIELD_NUMBER: _ClassVar[int]
    SLIDING_WINDOW_FIELD_NUMBER: _ClassVar[int]
    SLIDING_WINDOW_LAYERS_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    TIED_EMBEDDINGS_FIELD_NUMBER: _ClassVar[int]
    VOCAB_SIZE_FIELD_NUMBER: _ClassVar[int]
    V_HEAD_DIM_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    attention: Attention
    bias: Bias
    context_parallel: int
    data_parallel: int
    dense_ffn_hidden_size: int
    dtype: Dtype
    expert_groups: int
    expert_groups_per_token: int
    expert_parallel: int
    expert_tensor_parallel: int
    experts_per_token: int
    ffn_hidden_size: int
    first_dense_layers: int
    fused_gate_up: bool
    glu_clamp: float
    head_dim: int
    hidden_size: int
    hybrid_pattern: str
    kv_cache_length: int
    kv_lora_rank: int
    learned_position_embeddings: int
    mamba_chunk_size: int
    mamba_conv_kernel: int
    mamba_groups: int
    mamba_head_dim: int
    mamba_heads: int
    mamba_state_dim: int
    micro_batch_size: int
    mlp: Mlp
    moe_capacity_factor: float
    moe_layer_interval: int
    moe_routing_skew: float
    mtp_modules: int
    name: str
    norm: Norm
    num_attention_heads: int
    num_experts: int
    num_kv_heads: int
    num_layers: int
    pipeline_parallel: int
    q_lora_rank: int
    qk_rope_head_dim: int
    seq_length: int
    shared_expert_ffn_hidden_size: int
    shared_expert_gate: bool
    sliding_window: int
    sliding_window_layers: int
    tensor_parallel: int
    tied_embeddings: bool
    v_head_dim: int
    vocab_size: int
    workload: Workload
    def __init__(self, name: _Optional[str] = ..., hidden_size: _Optional[int] = ..., num_attention_heads: _Optional[int] = ..., num_kv_heads: _Optional[int] = ..., head_dim: _Optional[int] = ..., num_layers: _Optional[int] = ..., ffn_hidden_size: _Optional[int] = ..., mlp: _Optional[_Union[Mlp, str]] = ..., fused_gate_up: bool = ..., vocab_size: _Optional[int] = ..., seq_length: _Optional[int] = ..., micro_batch_size: _Optional[int] = ..., tensor_parallel: _Optional[int] = ..., dtype: _Optional[_Union[Dtype, str]] = ..., attention: _Optional[_Union[Attention, str]] = ..., workload: _Optional[_Union[Workload, str]] = ..., tied_embeddings: bool = ..., kv_cache_length: _Optional[int] = ..., norm: _Optional[_Union[Norm, str]] = ..., bias: _Optional[_Union[Bias, str]] = ..., learned_position_embeddings: _Optional[int] = ..., pipeline_parallel: _Optional[int] = ..., num_experts: _Optional[int] = ..., experts_per_token: _Optional[int] = ..., shared_expert_ffn_hidden_size: _Optional[int] = ..., shared_expert_gate: bool = ..., expert_groups: _Optional[int] = ..., expert_groups_per_token: _Optional[int] = ..., data_parallel: _Optional[int] = ..., first_dense_layers: _Optional[int] = ..., moe_layer_interval: _Optional[int] = ..., dense_ffn_hidden_size: _Optional[int] = ..., kv_lora_rank: _Optional[int] = ..., q_lora_rank: _Optional[int] = ..., qk_rope_head_dim: _Optional[int] = ..., v_head_dim: _Optional[int] = ..., sliding_window: _Optional[int] = ..., sliding_window_layers: _Optional[int] = ..., context_parallel: _Optional[int] = ..., expert_parallel: _Optional[int] = ..., expert_tensor_parallel: _Optional[int] = ..., moe_capacity_factor: _Optional[float] = ..., moe_routing_skew: _Optional[float] = ..., glu_clamp: _Optional[float] = ..., hybrid_pattern: _Optional[str] = ..., mamba_heads: _Optional[int] = ..., mamba_head_dim: _Optional[int] = ..., mamba_state_dim: _Optional[int] = ..., mamba_groups: _Optional[int] = ..., mamba_conv_kernel: _Optional[int] = ..., mamba_chunk_size: _Optional[int] = ..., mtp_modules: _Optional[int] = ...) -> None: ...

class Provenance(_message.Message):
    __slots__ = ["calibration", "device", "error_band_p10", "error_band_p90", "from_cache", "measured_at", "method", "relative_spread", "samples", "source", "storage"]
    CALIBRATION_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    ERROR_BAND_P10_FIELD_NUMBER: _ClassVar[int]
    ERROR_BAND_P90_FIELD_NUMBER: _ClassVar[int]
    FROM_CACHE_FIELD_NUMBER: _ClassVar[int]
    MEASURED_AT_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_SPREAD_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    calibration: str
    device: DeviceFingerprint
    error_band_p10: float
    error_band_p90: float
    from_cache: bool
    measured_at: _timestamp_pb2.Timestamp
    method: str
    relative_spread: float
    samples: int
    source: Source
    storage: StorageFate
    def __init__(self, source: _Optional[_Union[Source, str]] = ..., method: _Optional[str] = ..., device: _Optional[_Union[DeviceFingerprint, _Mapping]] = ..., samples: _Optional[int] = ..., relative_spread: _Optional[float] = ..., measured_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., from_cache: bool = ..., calibration: _Optional[str] = ..., error_band_p10: _Optional[float] = ..., error_band_p90: _Optional[float] = ..., storage: _Optional[_Union[StorageFate, str]] = ...) -> None: ...

class Dtype(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Mlp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Attention(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Workload(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Norm(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Bias(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Pass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Layout(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Source(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class StorageFate(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
