#include "gpu_worker/cuda/layer_ops.h"

#include "gpu_worker/cuda/layer_kernels.h"
#include "gpu_worker/cuda/moe_kernels.h"

namespace wavecrest::engine {

namespace {

cuda::RouteShape RouteOf(const LayerOp& op) {
  return {op.rows, op.tokens, op.cols, op.top_k, op.perm_mult, op.perm_inverse};
}

cuda::MlaShape MlaOf(const LayerOp& op) {
  return {op.rows, op.heads, op.head_dim, op.v_head_dim > 0 ? op.v_head_dim : op.head_dim,
          op.rope, op.latent};
}

// The MoE and MLA ops.
cudaError_t EnqueueRouting(const LayerOp& op, const std::vector<void*>& buf,
                           cuda::Elem e, cudaStream_t stream) {
  auto ptr = [&](int i) { return i >= 0 ? buf[i] : nullptr; };
  auto f32 = [&](int i) { return static_cast<float*>(ptr(i)); };
  auto i32 = [&](int i) { return static_cast<int32_t*>(ptr(i)); };
  switch (op.kind) {
    case LayerOpKind::kRouterTopK:
      return cuda::RouterTopK(ptr(op.a), f32(op.c), i32(op.d), op.tokens, op.experts, op.top_k, e,
                              stream);
    case LayerOpKind::kRouterTopKBackward:
      return cuda::RouterTopKBackward(f32(op.a), ptr(op.b), i32(op.d), ptr(op.c), op.tokens,
                                      op.experts, op.top_k, e, stream);
    case LayerOpKind::kPermute:
      return cuda::Permute(ptr(op.a), ptr(op.c), RouteOf(op), e, stream);
    case LayerOpKind::kPermuteBackward:
      return cuda::PermuteBackward(ptr(op.a), ptr(op.c), RouteOf(op), e, stream);
    case LayerOpKind::kCombine:
      return cuda::Combine(ptr(op.a), ptr(op.b), f32(op.d), ptr(op.c), RouteOf(op), e, stream);
    case LayerOpKind::kCombineBackward:
      return cuda::CombineBackward(ptr(op.a), ptr(op.b), f32(op.d), ptr(op.c), f32(op.e),
                                   RouteOf(op), e, stream);
    case LayerOpKind::kMlaAssemble:
      return cuda::MlaAssemble(ptr(op.a), ptr(op.b), ptr(op.d), ptr(op.c), MlaOf(op), e, stream);
    case LayerOpKind::kMlaAssembleBackward:
      return cuda::MlaAssembleBackward(ptr(op.a), ptr(op.c), ptr(op.d), ptr(op.e), MlaOf(op), e,
                                       stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

bool IsLayerKernel(LayerOpKind kind) {
  return kind != LayerOpKind::kGemm && kind != LayerOpKind::kGroupedGemm &&
         kind != LayerOpKind::kFusedAttention && kind != LayerOpKind::kFusedAttentionBackward;
}

cudaError_t EnqueueLayerKernel(const LayerOp& op, const std::vector<void*>& buf, cuda::Elem e,
                               cudaStream_t stream) {
  auto ptr = [&](int i) { return i >= 0 ? buf[i] : nullptr; };
  const cuda::HeadShape hs{op.batch, op.q_len, op.heads, op.kv_heads, op.head_dim};
  switch (op.kind) {
    case LayerOpKind::kNorm:
      return cuda::Norm(ptr(op.a), ptr(op.b), ptr(op.c), op.rows, op.cols, op.x_stride, op.rms, e,
                        stream);
    case LayerOpKind::kNormBackward:
      return cuda::NormBackward(ptr(op.a), ptr(op.b), ptr(op.d), ptr(op.c), op.rows, op.cols,
                                op.x_stride, op.rms, e, stream);
    case LayerOpKind::kActivation:
      return cuda::Activation(ptr(op.a), ptr(op.b), op.a_stride, ptr(op.c), op.rows, op.cols,
                              op.swiglu, e, stream);
    case LayerOpKind::kActivationBackward:
      return cuda::ActivationBackward(ptr(op.a), ptr(op.b), ptr(op.d), op.a_stride, ptr(op.c),
                                      ptr(op.e), op.rows, op.cols, op.swiglu, e, stream);
    case LayerOpKind::kAdd:
      return cuda::Add(ptr(op.a), ptr(op.b), ptr(op.c), op.rows * op.cols, e, stream);
    case LayerOpKind::kSplitHeads:
      return cuda::SplitHeads(ptr(op.a), ptr(op.c), ptr(op.d), ptr(op.e), hs, e, stream);
    case LayerOpKind::kMergeHeads:
      return cuda::MergeHeads(ptr(op.a), ptr(op.d), ptr(op.e), ptr(op.c), hs, e, stream);
    case LayerOpKind::kSoftmax:
      return cuda::Softmax(ptr(op.a), op.rows, op.cols, op.q_len, op.causal, op.window, op.scale,
                           e, stream);
    case LayerOpKind::kSoftmaxBackward:
      return cuda::SoftmaxBackward(ptr(op.a), ptr(op.b), op.rows, op.cols, op.scale, e, stream);
    default:
      return EnqueueRouting(op, buf, e, stream);
  }
}

}  // namespace wavecrest::engine
