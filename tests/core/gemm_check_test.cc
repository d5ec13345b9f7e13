// The engine's correctness check without a GPU (core/gemm_check.h): the host reference reads the
// operands as core/gemm.h defines them, and agrees with a CPU emulation of the column-major call
// the engine makes from its plan (core/gemm_plan.h); the tolerances accept correct results and
// reject a wrong element.
#include "core/gemm_check.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/gemm_plan.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using testing::H100Limits;

// cublasLtMatmul's column-major semantics, on the CPU, driven by the plan only:
// D[r + c·ldd] = Σ op(A)(r, kk) · op(B)(kk, c), per batch entry.
std::vector<double> EmulateCublas(const GemmPlan& p, const std::vector<double>& a,
                                  const std::vector<double>& b) {
  std::vector<double> d(p.d_elems * p.batch, 0);
  for (int64_t e = 0; e < p.batch; ++e) {
    for (int64_t c = 0; c < p.n; ++c) {
      for (int64_t r = 0; r < p.m; ++r) {
        double sum = 0;
        for (int64_t kk = 0; kk < p.k; ++kk) {
          const double av =
              p.trans_a ? a[e * p.a_elems + kk + r * p.lda] : a[e * p.a_elems + r + kk * p.lda];
          const double bv =
              p.trans_b ? b[e * p.b_elems + c + kk * p.ldb] : b[e * p.b_elems + kk + c * p.ldb];
          sum += av * bv;
        }
        d[e * p.d_elems + r + c * p.ldd] = sum;
      }
    }
  }
  return d;
}

void ExpectReferenceMatchesTheCall(const GemmKey& key, const DeviceLimits& device) {
  absl::StatusOr<GemmPlan> plan = PlanGemm(key, device, EngineOptions());
  ASSERT_TRUE(plan.ok()) << plan.status();
  // The buffers the engine fills: cuBLAS's A is the row-major right operand `w`, B the left `x`.
  std::vector<double> w(plan->a_elems * plan->batch), x(plan->b_elems * plan->batch);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>((i * 7919) % 23) - 11;
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 104729) % 19) - 9;
  const std::vector<double> d = EmulateCublas(*plan, w, x);
  const GemmShape& s = key.shape;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        const ReferenceVectors v = RowMajorVectors(plan->run_layout, s, b, i, j);
        double ref = 0;
        for (int64_t kk = 0; kk < s.k; ++kk) {
          ref += x[v.x_offset + kk * v.x_stride] * w[v.w_offset + kk * v.w_stride];
        }
        ASSERT_EQ(d[v.c_offset], ref)
            << GemmKeyString(key) << " at (" << b << ", " << i << ", " << j << ")";
      }
    }
  }
}

TEST(GemmCheckTest, TheRowMajorReferenceAgreesWithTheColumnMajorCallForEveryLayout) {
  for (Layout l : {Layout::kTN, Layout::kNN, Layout::kNT}) {
    for (GemmShape s : {GemmShape{5, 7, 3, 1}, GemmShape{4, 9, 6, 3}, GemmShape{1, 11, 2, 2}}) {
      ExpectReferenceMatchesTheCall({s, l, DType::kBf16}, H100Limits());
    }
  }
  // FP8 backward layouts on Hopper run as TN on transposed copies: the reference follows.
  for (Layout l : {Layout::kNN, Layout::kNT}) {
    ExpectReferenceMatchesTheCall({{16, 32, 48, 2}, l, DType::kFp8E4M3}, H100Limits());
  }
}

TEST(GemmCheckTest, TheReferenceReadsTheOperandsGemmHDefines) {
  // Forward Y = X·Wᵀ with X [M×K], W [N×K]: C[1][2] reads X's row 1 and W's row 2.
  const GemmShape s{3, 4, 5, 2};
  ReferenceVectors tn = RowMajorVectors(Layout::kTN, s, 1, 1, 2);
  EXPECT_EQ(tn.x_offset, 15 + 1 * 5);
  EXPECT_EQ(tn.x_stride, 1);
  EXPECT_EQ(tn.w_offset, 20 + 2 * 5);
  EXPECT_EQ(tn.c_offset, 12 + 1 * 4 + 2);
  // dgrad dX = dY·W with W [K×N]: column 2 of W, stride N.
  ReferenceVectors nn = RowMajorVectors(Layout::kNN, s, 0, 1, 2);
  EXPECT_EQ(nn.w_offset, 2);
  EXPECT_EQ(nn.w_stride, 4);
  // wgrad dW = dYᵀ·X with dY [K×M]: column 1 of dY, stride M.
  ReferenceVectors nt = RowMajorVectors(Layout::kNT, s, 0, 1, 2);
  EXPECT_EQ(nt.x_offset, 1);
  EXPECT_EQ(nt.x_stride, 3);
}

TEST(GemmCheckTest, ElementTypesDecodeOnTheHost) {
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0xc040), -3.0f);
  EXPECT_EQ(Fp16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(Fp16ToFloat(0xc500), -5.0f);
  EXPECT_EQ(Fp16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(Fp16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(Fp16ToFloat(0x7c00)));
  EXPECT_EQ(Fp8E4M3ToFloat(0x38), 1.0f);
  EXPECT_EQ(Fp8E4M3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(Fp8E4M3ToFloat(0xfe), -448.0f);
  EXPECT_EQ(Fp8E4M3ToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(Fp8E4M3ToFloat(0x7f)));
}

float RoundToBf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof(u));
  u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&v, &u, sizeof(u));
  return v;
}

// A BF16 GEMM as a GPU computes it (FP32 sums in some order, BF16 output) is accepted; the value of
// another element is not. The old tolerance, |ref|/128 + 1e-3·Σ|ab|,
// accepted both here.
TEST(GemmCheckTest, TolerancesAcceptRoundingAndRejectWrongElements) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t k : {64, 771, 4096, 8192}) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> x(k), w(k), w2(k);
      for (int64_t i = 0; i < k; ++i) {
        x[i] = RoundToBf16(u(rng));
        w[i] = RoundToBf16(u(rng));
        w2[i] = RoundToBf16(u(rng));
      }
      double exact = 0, abs_sum = 0, other = 0;
      float acc = 0;  // FP32, in a blocked order like a tiled kernel's
      for (int64_t blk = 0; blk < k; blk += 32) {
        float part = 0;
        for (int64_t i = blk; i < std::min(k, blk + 32); ++i) part += x[i] * w[i];
        acc += part;
      }
      for (int64_t i = 0; i < k; ++i) {
        exact += double(x[i]) * w[i];
        abs_sum += std::fabs(double(x[i]) * w[i]);
        other += double(x[i]) * w2[i];
      }
      const double tol = CheckTolerance(DType::kBf16, k, exact, abs_sum, 0);
      EXPECT_LE(std::fabs(RoundToBf16(acc) - exact), tol) << "k " << k;
      EXPECT_GT(std::fabs(other - exact), tol) << "k " << k;
      const double old_tol = std::fabs(exact) / 128 + 1e-3 * abs_sum;
      EXPECT_LT(tol, old_tol / 2) << "k " << k;
      if (trial == 0 && k >= 4096) {
        EXPECT_GT(std::fabs(other - exact), 20 * tol);
      }
    }
  }
  // FP8's tensor-core accumulation keeps about 14 bits: looser than BF16's FP32 accumulator, and
  // still far below a wrong element.
  const double k = 8192, exact = 30, abs_sum = 2048;
  const double fp8 = CheckTolerance(DType::kFp8E4M3, k, exact, abs_sum, 0);
  EXPECT_GT(fp8, 10 * CheckTolerance(DType::kBf16, k, exact, abs_sum, 0));
  EXPECT_LT(fp8, 0.3 * exact);
  // The H200's FP8 NN 2048³ (split accumulation, FAST_ACCUM off) that an FP32-accumulator
  // tolerance refused: C[1454][1400] = -0.0742188 against the exact -0.0722275, with
  // Σ|x·w| ≈ 519 (recovered from the refusal's tolerance, 0.000790443). Accepted now; the
  // element of another row or column (about ±Σ|x·w|/√K = ±11.5 away) is not.
  {
    const int64_t k2 = 2048;
    const double ex = -0.0722275, sum = 519.0, got = -0.0742188;
    const double tol = CheckTolerance(DType::kFp8E4M3, k2, ex, sum, 0);
    EXPECT_GT(tol, std::fabs(got - ex));
    EXPECT_LT(tol, 0.1 * sum / std::sqrt(double(k2)));
  }
  // Split-K partials kept in the output type widen it by one output rounding each.
  EXPECT_GT(CheckTolerance(DType::kBf16, k, exact, abs_sum, 4),
            CheckTolerance(DType::kBf16, k, exact, abs_sum, 0) + 3 * 0x1p-8 * exact);
  EXPECT_GT(CheckTolerance(DType::kTf32, k, exact, abs_sum, 0),
            CheckTolerance(DType::kFp32, k, exact, abs_sum, 0));
}

}  // namespace
}  // namespace wavecrest
