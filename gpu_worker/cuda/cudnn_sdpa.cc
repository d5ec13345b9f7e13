// cuDNN's fused attention, driven through its backend API (cudnn_graph.h), loaded at run time
// (gpu_worker/cuda/cudnn_api.h).
//
// The graphs are core/sdpa_graph.h's, translated one for one: each tensor a TENSOR descriptor
// (16-byte aligned, virtual or by value as described), each operation a POINTWISE, REDUCTION,
// MATMUL or RESHAPE operation descriptor, the lot one OPERATIONGRAPH on this worker's handle. The
// engine is the first configuration of heuristic mode A that finalizes (mode FALLBACK after it),
// as cuDNN's frontend picks by default; its workspace is what that plan asks for. Each launch
// binds the layer's buffers in a VARIANT_PACK and executes on the engine's stream (also while the
// layer engine captures its CUDA graph).
//
// What cuDNN's frontend does around these graphs for some versions is done here too: the FP32 dQ
// accumulator is zeroed before each backward for cuDNN before 9.6, and a backward whose key
// length is not a multiple of 128 is refused for cuDNN 9.15.0 and older: without a padding mask
// those versions can access memory out of bounds in CUDA graph replay, which is how the layer
// engine runs (fixed in 9.15.1, cudnn-frontend 1.16.0's release notes; the frontend adds a
// padding mask there, this worker does not build one).
#include "gpu_worker/cuda/cudnn_sdpa.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/sdpa_graph.h"
#include "core/status_macros.h"
#include "gpu_worker/cuda/cudnn_api.h"
#include "gpu_worker/cuda/kernels.h"

namespace wavecrest::engine {
namespace {

#ifdef WAVECREST_HAVE_CUDNN_HEADERS

// The handle attributes of the operation graph and the plan: cuDNN 9 marks them deprecated in
// favour of device-property descriptors (9.7+), yet every 9.x takes them, and the libraries this
// worker meets (PyTorch's wheels ship 9.1 and later) need them. Named by value, as cudnn_graph.h
// numbers them, so that the build stays free of deprecation warnings.
constexpr auto kGraphHandle = static_cast<cudnnBackendAttributeName_t>(800);
constexpr auto kPlanHandle = static_cast<cudnnBackendAttributeName_t>(400);

cudnnDataType_t DataType(SdpaType type, DType io) {
  switch (type) {
    case SdpaType::kIo:
      return io == DType::kFp16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
    case SdpaType::kFloat:
      return CUDNN_DATA_FLOAT;
    case SdpaType::kInt32:
      return CUDNN_DATA_INT32;
    case SdpaType::kBool:
      return CUDNN_DATA_BOOLEAN;
  }
  return CUDNN_DATA_FLOAT;
}

cudnnPointwiseMode_t PointwiseMode(SdpaMode mode) {
  switch (mode) {
    case SdpaMode::kMul:
      return CUDNN_POINTWISE_MUL;
    case SdpaMode::kAdd:
      return CUDNN_POINTWISE_ADD;
    case SdpaMode::kSub:
      return CUDNN_POINTWISE_SUB;
    case SdpaMode::kDiv:
      return CUDNN_POINTWISE_DIV;
    case SdpaMode::kExp:
      return CUDNN_POINTWISE_EXP;
    case SdpaMode::kLog:
      return CUDNN_POINTWISE_LOG;
    case SdpaMode::kGenIndex:
      return CUDNN_POINTWISE_GEN_INDEX;
    case SdpaMode::kCmpGe:
      return CUDNN_POINTWISE_CMP_GE;
    case SdpaMode::kCmpGt:
      return CUDNN_POINTWISE_CMP_GT;
    case SdpaMode::kBinarySelect:
      return CUDNN_POINTWISE_BINARY_SELECT;
    default:
      return CUDNN_POINTWISE_IDENTITY;
  }
}

// A graph's tensor and operation descriptors, finalized, in the graph's order.
struct Operations {
  std::map<int64_t, CudnnDesc> tensors;  // by uid
  std::vector<CudnnDesc> parts;          // the pointwise, reduction and matmul descriptors
  std::vector<CudnnDesc> ops;
};

absl::StatusOr<CudnnDesc> TensorDesc(const SdpaTensor& t, DType io) {
  ASSIGN_OR_RETURN(CudnnDesc d, CudnnDesc::Make(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  const std::string what = absl::StrCat("tensor ", t.name);
  const cudnnDataType_t type = DataType(t.type, io);
  const int64_t alignment = 16;
  const bool is_virtual = t.slot == SdpaSlot::kVirtual, by_value = t.slot == SdpaSlot::kByValue;
  RETURN_IF_ERROR(d.Set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type, 1, what));
  RETURN_IF_ERROR(d.Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, t.dims.data(), 4, what));
  RETURN_IF_ERROR(d.Set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, t.strides.data(), 4, what));
  RETURN_IF_ERROR(d.Set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &t.uid, 1, what));
  RETURN_IF_ERROR(d.Set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment, 1, what));
  RETURN_IF_ERROR(d.Set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &is_virtual, 1, what));
  if (by_value) {
    RETURN_IF_ERROR(d.Set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &by_value, 1, what));
  }
  RETURN_IF_ERROR(d.Finalize(what));
  return d;
}

// What one operation's descriptors are built from: the operation, the graph's I/O type, the
// graph's tensor descriptors by uid and the name errors give.
struct CudnnOpContext {
  const SdpaOp& op;
  DType io;
  const std::map<int64_t, CudnnDesc>& tensors;
  const std::string& what;
  const CudnnDesc& tensor(int64_t uid) const { return tensors.at(uid); }
};

// A POINTWISE operation: its mode descriptor in `part` (finalized), the operation in `node`.
absl::Status BuildPointwiseOp(const CudnnOpContext& c, CudnnDesc* part, CudnnDesc* node) {
  const SdpaOp& op = c.op;
  const std::string& what = c.what;
  ASSIGN_OR_RETURN(*part, CudnnDesc::Make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
  const cudnnPointwiseMode_t mode = PointwiseMode(op.mode);
  const cudnnDataType_t prec = DataType(op.compute, c.io);
  RETURN_IF_ERROR(part->Set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode, 1, what));
  RETURN_IF_ERROR(part->Set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &prec, 1, what));
  if (op.axis >= 0) {  // the index's axis (and the window's add, as cudnn-frontend sets it)
    const int64_t axis = op.axis;
    RETURN_IF_ERROR(part->Set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, &axis, 1, what));
  }
  RETURN_IF_ERROR(part->Finalize(what));
  ASSIGN_OR_RETURN(*node, CudnnDesc::Make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR));
  RETURN_IF_ERROR(node->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *part, what));
  RETURN_IF_ERROR(node->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, c.tensor(op.in[0]), what));
  if (op.in.size() > 1) {
    RETURN_IF_ERROR(node->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, c.tensor(op.in[1]), what));
  }
  if (op.in.size() > 2) {
    RETURN_IF_ERROR(node->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, c.tensor(op.in[2]), what));
  }
  return node->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, c.tensor(op.out), what);
}

// A REDUCTION operation (max or sum in FP32): its descriptor in `part`, the operation in `node`.
absl::Status BuildReductionOp(const CudnnOpContext& c, CudnnDesc* part, CudnnDesc* node) {
  const SdpaOp& op = c.op;
  const std::string& what = c.what;
  const cudnnDataType_t fp32 = CUDNN_DATA_FLOAT;
  ASSIGN_OR_RETURN(*part, CudnnDesc::Make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR));
  const cudnnReduceTensorOp_t mode =
      op.mode == SdpaMode::kMax ? CUDNN_REDUCE_TENSOR_MAX : CUDNN_REDUCE_TENSOR_ADD;
  RETURN_IF_ERROR(
      part->Set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &mode, 1, what));
  RETURN_IF_ERROR(part->Set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &fp32, 1, what));
  RETURN_IF_ERROR(part->Finalize(what));
  ASSIGN_OR_RETURN(*node, CudnnDesc::Make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR));
  RETURN_IF_ERROR(node->SetDesc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, c.tensor(op.in[0]), what));
  RETURN_IF_ERROR(node->SetDesc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, c.tensor(op.out), what));
  return node->SetDesc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, *part, what);
}

// A MATMUL operation (FP32 accumulation): its descriptor in `part`, the operation in `node`.
absl::Status BuildMatmulOp(const CudnnOpContext& c, CudnnDesc* part, CudnnDesc* node) {
  const SdpaOp& op = c.op;
  const std::string& what = c.what;
  const cudnnDataType_t fp32 = CUDNN_DATA_FLOAT;
  ASSIGN_OR_RETURN(*part, CudnnDesc::Make(CUDNN_BACKEND_MATMUL_DESCRIPTOR));
  RETURN_IF_ERROR(part->Set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &fp32, 1, what));
  RETURN_IF_ERROR(part->Finalize(what));
  ASSIGN_OR_RETURN(*node, CudnnDesc::Make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR));
  RETURN_IF_ERROR(node->SetDesc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, c.tensor(op.in[0]), what));
  RETURN_IF_ERROR(node->SetDesc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, c.tensor(op.in[1]), what));
  RETURN_IF_ERROR(node->SetDesc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c.tensor(op.out), what));
  return node->SetDesc(CUDNN_ATTR_OPERATION_MATMUL_DESC, *part, what);
}

// A RESHAPE operation in `node` (it has no descriptor of its own).
absl::Status BuildReshapeOp(const CudnnOpContext& c, CudnnDesc* node) {
  ASSIGN_OR_RETURN(*node, CudnnDesc::Make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR));
  RETURN_IF_ERROR(node->SetDesc(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, c.tensor(c.op.in[0]), c.what));
  return node->SetDesc(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, c.tensor(c.op.out), c.what);
}

// One operation of the graph by its kind: `part` (none for a reshape) and `node`, not finalized.
absl::Status BuildOperation(const CudnnOpContext& c, CudnnDesc* part, CudnnDesc* node) {
  switch (c.op.kind) {
    case SdpaOpKind::kPointwise:
      return BuildPointwiseOp(c, part, node);
    case SdpaOpKind::kReduction:
      return BuildReductionOp(c, part, node);
    case SdpaOpKind::kMatmul:
      return BuildMatmulOp(c, part, node);
    case SdpaOpKind::kReshape:
      return BuildReshapeOp(c, node);
  }
  return absl::OkStatus();
}

// Every tensor descriptor of `g`, then each operation's, finalized in the graph's order.
absl::StatusOr<Operations> BuildOperations(const SdpaGraph& g) {
  Operations built;
  const DType io = g.shape.dtype;
  for (const SdpaTensor& t : g.tensors) {
    ASSIGN_OR_RETURN(CudnnDesc d, TensorDesc(t, io));
    built.tensors.emplace(t.uid, std::move(d));
  }
  for (const SdpaOp& op : g.ops) {
    const std::string what = absl::StrCat(g.name, " operation ", op.name);
    CudnnDesc part, node;
    RETURN_IF_ERROR(BuildOperation({op, io, built.tensors, what}, &part, &node));
    RETURN_IF_ERROR(node.Finalize(what));
    if (part.get() != nullptr) built.parts.push_back(std::move(part));
    built.ops.push_back(std::move(node));
  }
  return built;
}

// A graph ready to execute: its descriptors, the chosen engine's plan and its workspace.
struct Plan {
  const SdpaGraph* graph = nullptr;
  Operations operations;
  CudnnDesc op_graph, plan;
  int64_t workspace = 0;
  int64_t engine = -1;
};

std::string ShapeString(const SdpaShape& s) {
  return absl::StrCat(s.dtype == DType::kFp16 ? "fp16" : "bf16", " b", s.batch, " heads", s.heads,
                      "/", s.kv_heads, " s", s.q_len, "x", s.kv_len, " d", s.head_dim,
                      s.causal ? " causal" : "");
}

// p->op_graph: the OPERATIONGRAPH of p->operations on `handle`, finalized.
absl::Status FinalizeOperationGraph(cudnnHandle_t handle, const SdpaGraph& g, Plan* p) {
  ASSIGN_OR_RETURN(p->op_graph, CudnnDesc::Make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  std::vector<cudnnBackendDescriptor_t> ops;
  for (const CudnnDesc& d : p->operations.ops) ops.push_back(d.get());
  RETURN_IF_ERROR(p->op_graph.Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                  ops.data(), static_cast<int64_t>(ops.size()), g.name));
  RETURN_IF_ERROR(p->op_graph.Set(kGraphHandle, CUDNN_TYPE_HANDLE, &handle, 1, g.name));
  return p->op_graph.Finalize(absl::StrCat(g.name, " graph"));
}

// The engine configurations a finalized heuristic descriptor offers, best first.
absl::StatusOr<std::vector<CudnnDesc>> HeuristicConfigs(const CudnnDesc& heur) {
  int64_t count = 0;
  RETURN_IF_ERROR(CudnnCheck(Cudnn().get(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                             "heuristic results"));
  std::vector<CudnnDesc> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(CudnnDesc c, CudnnDesc::Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(c.get());
    configs.push_back(std::move(c));
  }
  int64_t got = 0;
  if (count > 0) {
    RETURN_IF_ERROR(CudnnCheck(Cudnn().get(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
                               "heuristic results"));
  }
  configs.resize(static_cast<size_t>(got));  // the ones cuDNN filled in
  return configs;
}

// The global index of `config`'s engine into `*engine`, for the method string (best effort: left
// as it is when cuDNN does not say).
void ReadEngineIndex(const CudnnDesc& config, int64_t* engine) {
  absl::StatusOr<CudnnDesc> engine_desc = CudnnDesc::Make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  if (!engine_desc.ok()) return;
  cudnnBackendDescriptor_t e = engine_desc->get();
  int64_t n = 0;
  if (Cudnn().get(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                  &e) == CUDNN_STATUS_SUCCESS) {
    Cudnn().get(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, engine);
  }
}

// The execution plan of engine configuration `config` on `handle` into p->plan, with its
// workspace and engine index. False, with cuDNN's reason in `refused`, when the plan does not
// finalize (the caller tries the next configuration).
absl::StatusOr<bool> AdoptPlan(cudnnHandle_t handle, const CudnnDesc& config, Plan* p,
                               std::string* refused) {
  ASSIGN_OR_RETURN(CudnnDesc plan, CudnnDesc::Make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
  RETURN_IF_ERROR(plan.Set(kPlanHandle, CUDNN_TYPE_HANDLE, &handle, 1, "plan"));
  RETURN_IF_ERROR(plan.SetDesc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config, "plan"));
  if (absl::Status st = plan.Finalize("execution plan"); !st.ok()) {
    *refused = std::string(st.message());
    return false;
  }
  int64_t n = 0;
  RETURN_IF_ERROR(CudnnCheck(Cudnn().get(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                         CUDNN_TYPE_INT64, 1, &n, &p->workspace),
                             "workspace size"));
  ReadEngineIndex(config, &p->engine);
  p->plan = std::move(plan);
  return true;
}

// `g` ready to execute on `handle`: the first engine configuration of heuristic mode A whose plan
// finalizes, then mode FALLBACK's; FAILED_PRECONDITION with cuDNN's last refusal when none does.
absl::StatusOr<std::unique_ptr<Plan>> MakePlan(cudnnHandle_t handle, const SdpaGraph& g) {
  auto p = std::make_unique<Plan>();
  p->graph = &g;
  ASSIGN_OR_RETURN(p->operations, BuildOperations(g));
  RETURN_IF_ERROR(FinalizeOperationGraph(handle, g, p.get()));
  std::string refused;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    ASSIGN_OR_RETURN(CudnnDesc heur, CudnnDesc::Make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
    RETURN_IF_ERROR(heur.SetDesc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, p->op_graph, g.name));
    RETURN_IF_ERROR(heur.Set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode, 1, g.name));
    if (absl::Status st = heur.Finalize("engine heuristics"); !st.ok()) {
      refused = std::string(st.message());
      continue;
    }
    ASSIGN_OR_RETURN(const std::vector<CudnnDesc> configs, HeuristicConfigs(heur));
    for (const CudnnDesc& config : configs) {
      ASSIGN_OR_RETURN(const bool adopted, AdoptPlan(handle, config, p.get(), &refused));
      if (adopted) return p;
    }
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "cuDNN ", CudnnVersionString(), " has no engine for ", g.name, " of ", ShapeString(g.shape),
      " on this GPU", refused.empty() ? "" : absl::StrCat(": ", refused)));
}

class CudnnSdpa final : public SdpaRunner {
 public:
  ~CudnnSdpa() override {
    // Plans before the handle they were made on.
    backward_plan_.reset();
    forward_plan_.reset();
    if (handle_ != nullptr) Cudnn().destroy(handle_);
    if (own_ != nullptr) cudaFree(own_);
    if (workspace_ != nullptr) cudaFree(workspace_);
  }

  static absl::StatusOr<std::unique_ptr<SdpaRunner>> Make(const SdpaShape& shape, bool training,
                                                          cudaStream_t stream) {
    auto r = std::unique_ptr<CudnnSdpa>(new CudnnSdpa);
    r->stream_ = stream;
    ASSIGN_OR_RETURN(r->forward_, SdpaForwardGraph(shape, training));
    if (training) {
      if (CudnnVersionNumber() <= 91500 && shape.kv_len % 128 != 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "cuDNN ", CudnnVersionString(), " runs the attention backward of kv_len ", shape.kv_len,
            " (not a multiple of 128) safely in a CUDA graph only behind a padding mask this "
            "worker does not build; cuDNN 9.15.1 or later does not need it"));
      }
      ASSIGN_OR_RETURN(SdpaGraph backward, SdpaBackwardGraph(shape));
      r->backward_ = std::make_unique<SdpaGraph>(std::move(backward));
    }
    RETURN_IF_ERROR(CudnnCheck(Cudnn().create(&r->handle_), "cudnnCreate"));
    RETURN_IF_ERROR(CudnnCheck(Cudnn().set_stream(r->handle_, stream), "cudnnSetStream"));
    ASSIGN_OR_RETURN(r->forward_plan_, MakePlan(r->handle_, r->forward_));
    int64_t workspace = r->forward_plan_->workspace, own = r->forward_.own_bytes;
    if (r->backward_) {
      ASSIGN_OR_RETURN(r->backward_plan_, MakePlan(r->handle_, *r->backward_));
      workspace = std::max(workspace, r->backward_plan_->workspace);
      own = std::max(own, r->backward_->own_bytes);
    }
    r->workspace_bytes_ = workspace;
    r->own_bytes_ = own;
    if (cudaError_t e = cudaMalloc(&r->workspace_, std::max<int64_t>(workspace, 256));
        e != cudaSuccess) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cuDNN attention workspace of ", workspace >> 20, " MiB: ", cudaGetErrorString(e)));
    }
    if (cudaError_t e = cudaMalloc(&r->own_, std::max<int64_t>(own, 256)); e != cudaSuccess) {
      return absl::ResourceExhaustedError(
          absl::StrCat("attention buffers of ", own >> 20, " MiB: ", cudaGetErrorString(e)));
    }
    if (r->forward_.own_random_bytes > 0) {
      const cudaError_t e = cuda::FillRandom(
          r->own_, r->forward_.own_random_bytes / 2,
          shape.dtype == DType::kFp16 ? cuda::Elem::kFp16 : cuda::Elem::kBf16, 7, stream);
      if (e != cudaSuccess) {
        return absl::InternalError(absl::StrCat("fill the KV caches: ", cudaGetErrorString(e)));
      }
    }
    return std::unique_ptr<SdpaRunner>(std::move(r));
  }

  int64_t workspace_bytes() const override { return workspace_bytes_ + own_bytes_; }

  std::string Describe() const override {
    std::string s =
        absl::StrCat("cudnn-sdpa ", CudnnVersionString(), " fwd engine ", forward_plan_->engine);
    if (backward_plan_) absl::StrAppend(&s, " bwd engine ", backward_plan_->engine);
    absl::StrAppend(&s, " ws", workspace_bytes_ >> 20, "MiB");
    return s;
  }

  absl::Status Forward(const void* qkv, void* o, void* stats) override {
    return Execute(*forward_plan_, {{SdpaSlot::kQkvRows, const_cast<void*>(qkv)},
                                    {SdpaSlot::kORows, o},
                                    {SdpaSlot::kStats, stats}});
  }

  absl::Status Backward(const void* d_o, const void* qkv, const void* o, const void* stats,
                        void* dqkv) override {
    if (!backward_plan_) return absl::FailedPreconditionError("attention built for inference");
    const SdpaGraph& g = *backward_;
    if (CudnnVersionNumber() < 90600 && g.zero_offset >= 0) {
      if (cudaError_t e =
              cudaMemsetAsync(static_cast<char*>(own_) + g.zero_offset, 0, g.zero_bytes, stream_);
          e != cudaSuccess) {
        return absl::InternalError(absl::StrCat("zero dQ: ", cudaGetErrorString(e)));
      }
    }
    return Execute(*backward_plan_, {{SdpaSlot::kDoRows, const_cast<void*>(d_o)},
                                     {SdpaSlot::kQkvRows, const_cast<void*>(qkv)},
                                     {SdpaSlot::kORows, const_cast<void*>(o)},
                                     {SdpaSlot::kStats, const_cast<void*>(stats)},
                                     {SdpaSlot::kDqkvRows, dqkv}});
  }

 private:
  CudnnSdpa() = default;

  absl::Status Execute(const Plan& p, std::map<SdpaSlot, void*> bases) {
    bases[SdpaSlot::kOwn] = own_;
    std::vector<int64_t> uids;
    std::vector<void*> pointers;
    for (const SdpaTensor& t : p.graph->tensors) {
      if (t.slot == SdpaSlot::kVirtual) continue;
      uids.push_back(t.uid);
      if (t.slot == SdpaSlot::kByValue) {
        pointers.push_back(const_cast<float*>(&t.value));
      } else {
        pointers.push_back(static_cast<char*>(bases.at(t.slot)) + t.offset_bytes);
      }
    }
    ASSIGN_OR_RETURN(CudnnDesc pack, CudnnDesc::Make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
    const int64_t n = static_cast<int64_t>(uids.size());
    RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), n,
                             "variant pack"));
    RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                             pointers.data(), n, "variant pack"));
    RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace_, 1,
                             "variant pack"));
    RETURN_IF_ERROR(pack.Finalize("variant pack"));
    return CudnnCheck(Cudnn().execute(handle_, p.plan.get(), pack.get()),
                      absl::StrCat("execute ", p.graph->name));
  }

  cudaStream_t stream_ = nullptr;
  cudnnHandle_t handle_ = nullptr;
  SdpaGraph forward_;
  std::unique_ptr<SdpaGraph> backward_;
  std::unique_ptr<Plan> forward_plan_, backward_plan_;
  void* workspace_ = nullptr;
  void* own_ = nullptr;
  int64_t workspace_bytes_ = 0, own_bytes_ = 0;
};

#endif  // WAVECREST_HAVE_CUDNN_HEADERS

}  // namespace

std::string CudnnVersion(bool* loaded) {
#ifdef WAVECREST_HAVE_CUDNN_HEADERS
  const CudnnApi& api = Cudnn();
  *loaded = api.ok();
  if (!*loaded) return api.error;
  return CudnnVersionString();
#else
  *loaded = false;
  return "this worker was built without cuDNN's headers (cudnn_graph.h)";
#endif
}

std::string CudnnVersionString() {
#ifdef WAVECREST_HAVE_CUDNN_HEADERS
  if (!Cudnn().ok()) return "none";
  const size_t v = Cudnn().get_version();  // 9.10.2 is 91002
  return absl::StrCat(v / 10000, ".", (v / 100) % 100, ".", v % 100);
#else
  return "none";
#endif
}

absl::Status FinalizeSdpaOperations(const SdpaGraph& graph) {
#ifdef WAVECREST_HAVE_CUDNN_HEADERS
  if (!Cudnn().ok()) return absl::FailedPreconditionError(Cudnn().error);
  return BuildOperations(graph).status();
#else
  (void)graph;
  return absl::FailedPreconditionError("built without cuDNN's headers");
#endif
}

absl::StatusOr<std::unique_ptr<SdpaRunner>> MakeCudnnSdpa(const LayerOp& op, DType dtype,
                                                          bool training, cudaStream_t stream) {
  bool loaded = false;
  const std::string version = CudnnVersion(&loaded);
  if (!loaded) {
    return absl::FailedPreconditionError(
        absl::StrCat("fused attention needs cuDNN 9, which this worker cannot load (", version,
                     "): layers with fused attention are predicted"));
  }
  const SdpaShape shape = SdpaShapeOf(op, dtype);
  if (absl::Status st = CheckSdpaShape(shape); !st.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuDNN's fused attention does not take this layer: ", st.message()));
  }
#ifdef WAVECREST_HAVE_CUDNN_HEADERS
  return CudnnSdpa::Make(shape, training, stream);
#else
  (void)training;
  (void)stream;
  return absl::FailedPreconditionError("built without cuDNN's headers");
#endif
}

}  // namespace wavecrest::engine
