// The timing engine's correctness check, decided without a GPU: which elements of the operands a
// sampled output element of C = op(A)·op(B) depends on, read in the row-major terms of core/gemm.h
// and not in the cuBLAS terms the engine calls (so a wrong m/n swap, transpose or leading
// dimension in the call is caught, not reproduced), the host decoding of the stored element types,
// and how far a correct result may be from the exact one.
#ifndef WAVECREST_CORE_GEMM_CHECK_H_
#define WAVECREST_CORE_GEMM_CHECK_H_

#include <cstdint>

#include "core/gemm.h"

namespace wavecrest {

// Element offsets (in elements, batch included) of the K operand values and of the output element
// C[i][j] of batch entry `b`, in the buffers the engine fills, stored as core/gemm.h says:
//   TN  Y = X·Wᵀ   X [M×K], W [N×K]   (the row-major forward pass)
//   NN  dX = dY·W  dY [M×K], W [K×N]
//   NT  dW = dYᵀ·X dY [K×M], X [K×N]
// `x` is the left operand (the buffer cuBLAS calls B), `w` the right one (cuBLAS's A); element kk
// of the dot product is x[x_offset + kk·x_stride] · w[w_offset + kk·w_stride].
struct ReferenceVectors {
  int64_t x_offset = 0, x_stride = 1;
  int64_t w_offset = 0, w_stride = 1;
  int64_t c_offset = 0;
};
ReferenceVectors RowMajorVectors(Layout layout, const GemmShape& shape, int64_t b, int64_t i,
                                 int64_t j);

// Host decoding of stored elements (bit patterns as the GPU writes them).
float Bf16ToFloat(uint16_t bits);
float Fp16ToFloat(uint16_t bits);
float Fp8E4M3ToFloat(uint8_t bits);  // OCP E4M3: bias 7, no infinities, S.1111.111 is NaN

// The largest |got − exact| accepted for one output element, where `exact` is the dot product of
// the stored inputs in double and `abs_sum` = Σ|x·w|. Rounding of the output (and of partial sums
// that a split-K reduction keeps in the output type, `output_type_partials` of them) plus
// accumulation error growing as √K in the accumulator's precision (FP32; about 14 bits for FP8 fast
// accumulation on Hopper) plus, for TF32, rounding of the inputs, each scaled by the size of the
// partial sums, max(|exact|, abs_sum/√K). A wrong element (another row, column or batch) differs
// by about that scale, far outside. FP8 takes the ~14-bit accumulator in both of cuBLASLt's modes:
// with CUBLASLT_MATMUL_DESC_FAST_ACCUM off ("split accumulation", Transformer Engine's backward)
// the tensor core still sums each chunk of K in that precision before the FP32 promotion, which
// bounds the growth, not the step (on the H200, NN 2048³: 0.0020 off at a partial-sum scale of
// 11.5, 2^-12.5 of it: one 14-bit step, 400x what an FP32 accumulator allows).
double CheckTolerance(DType dtype, int64_t k, double exact, double abs_sum,
                      int output_type_partials);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_GEMM_CHECK_H_
