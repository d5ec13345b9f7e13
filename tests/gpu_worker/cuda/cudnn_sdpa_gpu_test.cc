// cuDNN's fused attention on a GPU (CTest label `gpu`, CUDA builds): the worker's runner
// (gpu_worker/cuda/cudnn_sdpa.h) computes what the graph it hands cuDNN means. The same graph,
// run on the host in double (tests/core/sdpa_interpreter.h, itself held against attention
// written out), is the reference for the output, the statistics and the gradients, from the
// same FP16 inputs.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "gmock/gmock.h"
#include "gpu_worker/cuda/cudnn_sdpa.h"
#include "gtest/gtest.h"
#include "tests/core/sdpa_interpreter.h"
#include "tests/gpu_worker/cuda/gpu_required.h"

namespace wavecrest {
namespace {

class CudnnAttentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WAVECREST_REQUIRE_GPU();
    bool loaded = false;
    const std::string why = engine::CudnnVersion(&loaded);
    if (!loaded) GTEST_SKIP() << "no cuDNN 9 to load: " << why;
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    if (prop.major < 8) GTEST_SKIP() << "cuDNN's fused attention needs sm80 or later";
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

// FP16 values in [-1, 1) on the device, and the same values (rounded) on the host.
struct Halves {
  std::vector<double> host;
  void* device = nullptr;
  Halves(size_t n, uint32_t seed) : host(n) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<__half> h(n);
    for (size_t i = 0; i < n; ++i) {
      h[i] = __float2half(u(rng));
      host[i] = __half2float(h[i]);
    }
    EXPECT_EQ(cudaMalloc(&device, n * 2), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(device, h.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~Halves() { cudaFree(device); }
};

struct Output {
  void* device = nullptr;
  size_t bytes;
  explicit Output(size_t b) : bytes(b) { EXPECT_EQ(cudaMalloc(&device, b), cudaSuccess); }
  ~Output() { cudaFree(device); }
  std::vector<double> Halves() const {
    std::vector<__half> h(bytes / 2);
    EXPECT_EQ(cudaMemcpy(h.data(), device, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<double> v(h.size());
    for (size_t i = 0; i < h.size(); ++i) v[i] = __half2float(h[i]);
    return v;
  }
  std::vector<double> Floats() const {
    std::vector<float> f(bytes / 4);
    EXPECT_EQ(cudaMemcpy(f.data(), device, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return {f.begin(), f.end()};
  }
};

// Largest |got − want| against the largest |want|: FP16 storage and FP32 arithmetic keep it to
// about 1% of the scale (a wrong mask, scale, transpose or head group is off by order one).
void ExpectClose(const std::vector<double>& got, const std::unordered_map<int64_t, double>& want,
                 int bytes, const std::string& what) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want.at(static_cast<int64_t>(i) * bytes);
    err = std::max(err, std::abs(got[i] - w));
    scale = std::max(scale, std::abs(w));
  }
  EXPECT_LE(err, 0.01 * scale + 1e-3) << what << ": largest error " << err << " at scale " << scale;
}

TEST_F(CudnnAttentionTest, ForwardAndBackwardAgreeWithTheGraphOnTheHost) {
  for (int64_t kv_heads : {4, 2}) {
    for (bool causal : {true, false}) {
      LayerOp op;
      op.kind = LayerOpKind::kFusedAttention;
      op.batch = 1;
      op.heads = 4;
      op.kv_heads = kv_heads;
      op.q_len = op.kv_len = 128;
      op.head_dim = 64;
      op.causal = causal;
      op.scale = 0.125f;
      const std::string name = absl::StrCat("kv_heads ", kv_heads, causal ? " causal" : "");
      absl::StatusOr<std::unique_ptr<engine::SdpaRunner>> runner =
          engine::MakeCudnnSdpa(op, DType::kFp16, /*training=*/true, stream_);
      ASSERT_TRUE(runner.ok()) << name << ": " << runner.status();
      const SdpaShape s = SdpaShapeOf(op, DType::kFp16);
      const int64_t T = s.q_len, W = (s.heads + 2 * s.kv_heads) * s.head_dim;
      const int64_t o_elems = T * s.heads * s.head_dim;
      Halves qkv(T * W, 1), d_o(o_elems, 2);
      Output o(o_elems * 2), stats(s.heads * T * 4), dqkv(T * W * 2);
      ASSERT_TRUE((*runner)->Forward(qkv.device, o.device, stats.device).ok());
      ASSERT_TRUE(
          (*runner)->Backward(d_o.device, qkv.device, o.device, stats.device, dqkv.device).ok());
      ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess) << name;

      std::map<SdpaSlot, std::unordered_map<int64_t, double>> mem;
      for (size_t i = 0; i < qkv.host.size(); ++i) mem[SdpaSlot::kQkvRows][i * 2] = qkv.host[i];
      for (size_t i = 0; i < d_o.host.size(); ++i) mem[SdpaSlot::kDoRows][i * 2] = d_o.host[i];
      SdpaInterpreter reference(&mem);
      reference.Run(*SdpaForwardGraph(s, true));
      reference.Run(*SdpaBackwardGraph(s));
      ExpectClose(o.Halves(), mem[SdpaSlot::kORows], 2, name + " O");
      ExpectClose(stats.Floats(), mem[SdpaSlot::kStats], 4, name + " stats");
      ExpectClose(dqkv.Halves(), mem[SdpaSlot::kDqkvRows], 2, name + " dQKV");
      EXPECT_THAT((*runner)->Describe(), ::testing::HasSubstr("cudnn-sdpa 9."));

      // The inference forward (prefill): no statistics stored, the same O. cuDNN 9.19 found no
      // engine for it before its graph kept the log-sum-exp (core/sdpa_graph.cc).
      absl::StatusOr<std::unique_ptr<engine::SdpaRunner>> prefill =
          engine::MakeCudnnSdpa(op, DType::kFp16, /*training=*/false, stream_);
      ASSERT_TRUE(prefill.ok()) << name << " inference: " << prefill.status();
      Output o2(o_elems * 2);
      ASSERT_TRUE((*prefill)->Forward(qkv.device, o2.device, nullptr).ok());
      ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess) << name;
      ExpectClose(o2.Halves(), mem[SdpaSlot::kORows], 2, name + " O (inference)");
    }
  }
}

}  // namespace
}  // namespace wavecrest
