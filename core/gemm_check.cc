#include "core/gemm_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace wavecrest {

ReferenceVectors RowMajorVectors(Layout layout, const GemmShape& s, int64_t b, int64_t i,
                                 int64_t j) {
  ReferenceVectors v;
  const int64_t x_base = b * s.m * s.k, w_base = b * s.k * s.n;
  switch (layout) {
    case Layout::kTN:  // X[i][kk] at i·K + kk; W[j][kk] at j·K + kk
      v.x_offset = x_base + i * s.k;
      v.x_stride = 1;
      v.w_offset = w_base + j * s.k;
      v.w_stride = 1;
      break;
    case Layout::kNN:  // dY[i][kk] at i·K + kk; W[kk][j] at kk·N + j
      v.x_offset = x_base + i * s.k;
      v.x_stride = 1;
      v.w_offset = w_base + j;
      v.w_stride = s.n;
      break;
    case Layout::kNT:  // dY[kk][i] at kk·M + i; X[kk][j] at kk·N + j
      v.x_offset = x_base + i;
      v.x_stride = s.m;
      v.w_offset = w_base + j;
      v.w_stride = s.n;
      break;
  }
  v.c_offset = b * s.m * s.n + i * s.n + j;
  return v;
}

float Bf16ToFloat(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

float Fp16ToFloat(uint16_t bits) {
  const int sign = (bits >> 15) & 1, exp = (bits >> 10) & 0x1f, man = bits & 0x3ff;
  double v;
  if (exp == 0x1f) {
    v = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    v = std::ldexp(man, -24);  // subnormal: man · 2^-14 / 2^10
  } else {
    v = std::ldexp(1024 + man, exp - 25);  // (1 + man/2^10) · 2^(exp-15)
  }
  return static_cast<float>(sign ? -v : v);
}

float Fp8E4M3ToFloat(uint8_t bits) {
  const int sign = (bits >> 7) & 1, exp = (bits >> 3) & 0xf, man = bits & 0x7;
  if (exp == 0xf && man == 0x7) return std::numeric_limits<float>::quiet_NaN();
  const double v = exp == 0 ? std::ldexp(man, -9)             // man/8 · 2^-6
                            : std::ldexp(8 + man, exp - 10);  // (1 + man/8) · 2^(exp-7)
  return static_cast<float>(sign ? -v : v);
}

double CheckTolerance(DType dtype, int64_t k, double exact, double abs_sum,
                      int output_type_partials) {
  const double rk = std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
  const double scale = std::max(std::fabs(exact), abs_sum / rk);
  // Unit roundoff of the stored output: BF16 and FP8 GEMMs write BF16 here.
  double u_out = 0x1p-24;
  if (dtype == DType::kBf16 || dtype == DType::kFp8E4M3) u_out = 0x1p-8;
  if (dtype == DType::kFp16) u_out = 0x1p-11;
  // The accumulator: FP32, except FP8's tensor-core accumulation, which keeps about 14 bits
  // (DeepSeek-V3 technical report, arXiv 2412.19437, section 3.3.2), fast accumulation or split.
  const double u_acc = dtype == DType::kFp8E4M3 ? 0x1p-13 : 0x1p-24;
  // Accumulation error, growing as √K (16 standard deviations), and TF32's input rounding (both
  // inputs to 10+1 bits).
  double acc = output_type_partials * u_out * scale + 16 * rk * u_acc * scale + 1e-6 * scale;
  if (dtype == DType::kTf32) acc += 8 * 0x1p-10 * scale;
  // The stored output rounds (exact + acc) to the nearest: at most u_out of it, then the error.
  return u_out * (std::fabs(exact) + acc) + acc + std::numeric_limits<float>::min();
}

}  // namespace wavecrest
