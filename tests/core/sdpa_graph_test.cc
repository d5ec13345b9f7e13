// The cuDNN attention graphs (core/sdpa_graph.h), checked without cuDNN: their structure, where
// they read and write in the layer's buffers, and their arithmetic, by running them on the host
// (a small interpreter of the four operation kinds over strided 4-D tensors, in double) against
// attention written out directly, and the backward against finite differences of the forward.
#include "core/sdpa_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <unordered_map>

#include "tests/core/sdpa_interpreter.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

SdpaShape Small(int64_t heads, int64_t kv_heads, bool causal, int64_t window = 0,
                int64_t v_head_dim = 0) {
  SdpaShape s;
  s.window = window;
  s.v_head_dim = v_head_dim;
  s.batch = 2;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.q_len = s.kv_len = 6;
  s.head_dim = 8;
  s.causal = causal;
  s.scale = static_cast<float>(1 / std::sqrt(8.0));
  return s;
}

// Attention written out: Q, K, V [b][h][t][c] from the QKV rows (query heads, then K, then V, of
// the value head dim), a sliding window keeping keys j with i − j < window.
struct Direct {
  SdpaShape s;
  std::vector<double> qkv, d_o;  // rows
  int64_t Dv() const { return SdpaValueDim(s); }
  int64_t W() const { return (s.heads + s.kv_heads) * s.head_dim + s.kv_heads * Dv(); }
  bool Masked(int64_t i, int64_t j) const {
    return (s.causal && j > i) || (s.window > 0 && i - j >= s.window);
  }
  double& At(std::vector<double>& rows, int64_t w, int64_t b, int64_t t, int64_t col) {
    return rows[(b * s.q_len + t) * w + col];
  }
  double Q(int64_t b, int64_t h, int64_t t, int64_t c) {
    return At(qkv, W(), b, t, h * s.head_dim + c);
  }
  double K(int64_t b, int64_t h, int64_t t, int64_t c) {
    const int64_t g = s.heads / s.kv_heads;
    return At(qkv, W(), b, t, (s.heads + h / g) * s.head_dim + c);
  }
  double V(int64_t b, int64_t h, int64_t t, int64_t c) {
    const int64_t g = s.heads / s.kv_heads;
    return At(qkv, W(), b, t, (s.heads + s.kv_heads) * s.head_dim + (h / g) * Dv() + c);
  }
  // P[i][j] of one (b, h), and the log-sum-exp of each row.
  std::vector<std::vector<double>> Probs(int64_t b, int64_t h, std::vector<double>* lse) {
    const int64_t n = s.q_len;
    std::vector<std::vector<double>> p(n, std::vector<double>(n, 0));
    lse->assign(n, 0);
    for (int64_t i = 0; i < n; ++i) {
      double m = -1e300;
      for (int64_t j = 0; j < n; ++j) {
        if (Masked(i, j)) continue;
        double dot = 0;
        for (int64_t c = 0; c < s.head_dim; ++c) dot += Q(b, h, i, c) * K(b, h, j, c);
        p[i][j] = dot * s.scale;
        m = std::max(m, p[i][j]);
      }
      double z = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (Masked(i, j)) continue;
        p[i][j] = std::exp(p[i][j] - m);
        z += p[i][j];
      }
      for (double& v : p[i]) v /= z;
      (*lse)[i] = m + std::log(z);
    }
    return p;
  }
};

// Fills a slot's elements (I/O type) from rows.
void Load(std::unordered_map<int64_t, double>* slot, const std::vector<double>& rows) {
  for (size_t i = 0; i < rows.size(); ++i) (*slot)[static_cast<int64_t>(i) * 2] = rows[i];
}

std::vector<double> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

class SdpaGraphMath : public ::testing::TestWithParam<std::tuple<int, bool, int, int>> {};

TEST_P(SdpaGraphMath, ForwardAndBackwardMatchAttentionWrittenOut) {
  const auto [kv_heads, causal, window, v_dim] = GetParam();
  Direct x{Small(4, kv_heads, causal, window, v_dim), {}, {}};
  const SdpaShape& s = x.s;
  const int64_t T = s.batch * s.q_len, W = x.W(), hd = s.head_dim, dv = x.Dv();
  x.qkv = Random(T * W, 1);
  x.d_o = Random(T * s.heads * dv, 2);
  absl::StatusOr<SdpaGraph> fwd = SdpaForwardGraph(s, /*training=*/true);
  absl::StatusOr<SdpaGraph> bwd = SdpaBackwardGraph(s);
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  ASSERT_TRUE(bwd.ok()) << bwd.status();
  ASSERT_TRUE(ValidateSdpaGraph(*fwd).ok()) << ValidateSdpaGraph(*fwd);
  ASSERT_TRUE(ValidateSdpaGraph(*bwd).ok()) << ValidateSdpaGraph(*bwd);

  std::map<SdpaSlot, std::unordered_map<int64_t, double>> mem;
  Load(&mem[SdpaSlot::kQkvRows], x.qkv);
  Load(&mem[SdpaSlot::kDoRows], x.d_o);
  SdpaInterpreter run(&mem);
  run.Run(*fwd);
  run.Run(*bwd);

  // Direct forward and backward of every (b, h).
  const int64_t n = s.q_len, g = s.heads / s.kv_heads;
  const int64_t kv_w = s.kv_heads * (hd + dv);  // the K and V part of a row
  std::vector<double> dq(T * s.heads * hd, 0), dkv(T * kv_w, 0);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      std::vector<double> lse;
      const auto p = x.Probs(b, h, &lse);
      auto d_o = [&](int64_t t, int64_t c) {
        return x.d_o[(b * n + t) * s.heads * dv + h * dv + c];
      };
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR(mem[SdpaSlot::kStats].at(((b * s.heads + h) * n + i) * 4), lse[i], 1e-9);
        for (int64_t c = 0; c < dv; ++c) {
          double o = 0;
          for (int64_t j = 0; j < n; ++j) o += p[i][j] * x.V(b, h, j, c);
          EXPECT_NEAR(mem[SdpaSlot::kORows].at(((b * n + i) * s.heads * dv + h * dv + c) * 2), o,
                      1e-9)
              << "O b" << b << " h" << h << " t" << i << " c" << c;
        }
      }
      // dP = dO·Vᵀ; dS = P ∘ (dP − rowsum(P ∘ dP)) · scale.
      std::vector<std::vector<double>> ds(n, std::vector<double>(n, 0));
      for (int64_t i = 0; i < n; ++i) {
        std::vector<double> dp(n, 0);
        double row = 0;
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t c = 0; c < dv; ++c) dp[j] += d_o(i, c) * x.V(b, h, j, c);
          row += p[i][j] * dp[j];
        }
        for (int64_t j = 0; j < n; ++j) ds[i][j] = p[i][j] * (dp[j] - row) * s.scale;
      }
      const int64_t kvh = h / g;
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t c = 0; c < hd; ++c) {
          double q_grad = 0, k_grad = 0;
          for (int64_t j = 0; j < n; ++j) {
            q_grad += ds[t][j] * x.K(b, h, j, c);
            k_grad += ds[j][t] * x.Q(b, h, j, c);
          }
          dq[(b * n + t) * s.heads * hd + h * hd + c] = q_grad;
          dkv[(b * n + t) * kv_w + kvh * hd + c] += k_grad;
        }
        for (int64_t c = 0; c < dv; ++c) {
          double v_grad = 0;
          for (int64_t j = 0; j < n; ++j) v_grad += p[j][t] * d_o(j, c);
          dkv[(b * n + t) * kv_w + s.kv_heads * hd + kvh * dv + c] += v_grad;
        }
      }
    }
  }
  const auto& dqkv = mem[SdpaSlot::kDqkvRows];
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t col = 0; col < W; ++col) {
      const double want = col < s.heads * hd ? dq[t * s.heads * hd + col]
                                             : dkv[t * kv_w + col - s.heads * hd];
      EXPECT_NEAR(dqkv.at((t * W + col) * 2), want, 1e-9) << "dQKV row " << t << " col " << col;
    }
  }
  // Every element of the gradient rows written exactly once; nothing outside them.
  const auto& writes = run.Writes(SdpaSlot::kDqkvRows);
  EXPECT_EQ(static_cast<int64_t>(writes.size()), T * W);
  for (const auto& [addr, count] : writes) {
    EXPECT_EQ(count, 1) << "byte " << addr;
    EXPECT_LT(addr, T * W * 2);
  }
}

INSTANTIATE_TEST_SUITE_P(HeadsAndMasks, SdpaGraphMath,
                         ::testing::Combine(::testing::Values(4, 2, 1), ::testing::Bool(),
                                            ::testing::Values(0), ::testing::Values(0)));
// Sliding windows (local attention) and a value head dim other than the query's (MLA).
INSTANTIATE_TEST_SUITE_P(WindowsAndValueDims, SdpaGraphMath,
                         ::testing::Values(std::make_tuple(2, true, 3, 0),
                                           std::make_tuple(4, true, 1, 0),
                                           std::make_tuple(4, true, 0, 16),
                                           std::make_tuple(1, true, 2, 16),
                                           std::make_tuple(4, false, 0, 16)));

// The inference forward (prefill, decode) keeps the softmax's log-sum-exp as cuDNN's fused engines
// expect it (cudnn-frontend's composite softmax before 9.21: log of the row sum plus the row max,
// into a virtual tensor), stores no statistics, and computes the training forward's O. Without the
// two operations cuDNN 9.19 found no engine for the prefill forward on the H100 and the H200.
TEST(SdpaGraph, InferenceForwardKeepsTheLogSumExpPatternInAVirtualTensor) {
  for (bool causal : {true, false}) {
    const SdpaShape s = Small(4, 2, causal);
    const SdpaGraph train = *SdpaForwardGraph(s, true), infer = *SdpaForwardGraph(s, false);
    ASSERT_TRUE(ValidateSdpaGraph(infer).ok()) << ValidateSdpaGraph(infer);
    auto find_op = [](const SdpaGraph& g, SdpaMode mode) -> const SdpaOp* {
      for (const SdpaOp& op : g.ops) {
        if (op.mode == mode) return &op;
      }
      return nullptr;
    };
    for (const SdpaGraph* g : {&train, &infer}) {
      const SdpaOp* log = find_op(*g, SdpaMode::kLog);
      const SdpaOp* add = find_op(*g, SdpaMode::kAdd);
      ASSERT_NE(log, nullptr) << g->name << (g == &infer ? " (inference)" : " (training)");
      ASSERT_NE(add, nullptr);
      EXPECT_EQ(g->Find(log->in[0])->name, "Z");
      EXPECT_EQ(g->Find(add->in[0])->name, "M");
      EXPECT_EQ(add->in[1], log->out);
      EXPECT_EQ(g->Find(add->out)->slot,
                g == &train ? SdpaSlot::kStats : SdpaSlot::kVirtual);
    }
    for (const SdpaTensor& t : infer.tensors) EXPECT_NE(t.slot, SdpaSlot::kStats) << t.name;
    const int64_t T = s.batch * s.q_len, W = (s.heads + 2 * s.kv_heads) * s.head_dim;
    const std::vector<double> qkv = Random(T * W, 5);
    std::map<SdpaSlot, std::unordered_map<int64_t, double>> a, b;
    Load(&a[SdpaSlot::kQkvRows], qkv);
    Load(&b[SdpaSlot::kQkvRows], qkv);
    SdpaInterpreter(&a).Run(train);
    SdpaInterpreter(&b).Run(infer);
    EXPECT_TRUE(b[SdpaSlot::kStats].empty());
    ASSERT_EQ(a[SdpaSlot::kORows].size(), b[SdpaSlot::kORows].size());
    for (const auto& [at, o] : a[SdpaSlot::kORows]) EXPECT_EQ(b[SdpaSlot::kORows].at(at), o) << at;
  }
}
// The backward against the forward: dL/dx for L = Σ dO ∘ O, by central differences of the forward
// graph, at a few elements of Q, K and V (grouped heads, causal).
TEST(SdpaGraph, BackwardIsTheDerivativeOfTheForward) {
  const SdpaShape s = Small(4, 2, true);
  const int64_t T = s.batch * s.q_len, W = (s.heads + 2 * s.kv_heads) * s.head_dim;
  const std::vector<double> qkv = Random(T * W, 3), d_o = Random(T * s.heads * s.head_dim, 4);
  const SdpaGraph fwd = *SdpaForwardGraph(s, true), bwd = *SdpaBackwardGraph(s);
  auto loss = [&](const std::vector<double>& rows) {
    std::map<SdpaSlot, std::unordered_map<int64_t, double>> mem;
    Load(&mem[SdpaSlot::kQkvRows], rows);
    SdpaInterpreter(&mem).Run(fwd);
    double l = 0;
    for (size_t i = 0; i < d_o.size(); ++i) l += d_o[i] * mem[SdpaSlot::kORows].at(i * 2);
    return l;
  };
  std::map<SdpaSlot, std::unordered_map<int64_t, double>> mem;
  Load(&mem[SdpaSlot::kQkvRows], qkv);
  Load(&mem[SdpaSlot::kDoRows], d_o);
  SdpaInterpreter run(&mem);
  run.Run(fwd);
  run.Run(bwd);
  const double h = 1e-6;
  for (int64_t element : {int64_t{5}, W * 3 + 33, W * 7 + 40, W * 11 + 55, W * 8 + 63}) {
    std::vector<double> up = qkv, down = qkv;
    up[element] += h;
    down[element] -= h;
    EXPECT_NEAR(mem[SdpaSlot::kDqkvRows].at(element * 2), (loss(up) - loss(down)) / (2 * h), 1e-6)
        << "element " << element;
  }
}

// Where the graphs of real layers read and write: inside the layer program's buffers, every
// device tensor aligned, the runner's memory sized to what it holds.
TEST(SdpaGraph, RealLayersStayInsideTheirBuffers) {
  for (Workload w : {Workload::kTraining, Workload::kPrefill, Workload::kDecode}) {
    for (int64_t hd : {64, 128, 256}) {
      ModelSpec spec;
      spec.hidden_size = 4096;
      spec.num_attention_heads = 4096 / hd;
      spec.num_kv_heads = spec.num_attention_heads / 4;
      spec.num_layers = 2;
      spec.vocab_size = 32000;
      spec.seq_length = 2048;
      spec.micro_batch_size = 2;
      spec.kv_cache_length = 4096;
      spec.attention = Attention::kFlash;
      spec.workload = w;
      spec.mlp = Mlp::kSwiglu;
      const ModelSpec norm = *NormalizeSpec(spec);
      const LayerKey key = *MakeLayerKey(LayerKind::kFusedAttention, norm);
      const LayerProgram program = *PlanLayerProgram(key);
      for (const LayerOp& op : program.ops) {
        if (op.kind != LayerOpKind::kFusedAttention &&
            op.kind != LayerOpKind::kFusedAttentionBackward) {
          continue;
        }
        const SdpaShape shape = SdpaShapeOf(op, norm.dtype);
        const bool forward = op.kind == LayerOpKind::kFusedAttention;
        absl::StatusOr<SdpaGraph> g =
            forward ? SdpaForwardGraph(shape, program.training) : SdpaBackwardGraph(shape);
        ASSERT_TRUE(g.ok()) << g.status();
        ASSERT_TRUE(ValidateSdpaGraph(*g).ok()) << ValidateSdpaGraph(*g);
        // The operands of the op, by slot.
        const std::map<SdpaSlot, int> buffer =
            forward ? std::map<SdpaSlot, int>{{SdpaSlot::kQkvRows, op.a},
                                              {SdpaSlot::kORows, op.c},
                                              {SdpaSlot::kStats, op.d}}
                    : std::map<SdpaSlot, int>{{SdpaSlot::kDoRows, op.a},
                                              {SdpaSlot::kQkvRows, op.b},
                                              {SdpaSlot::kORows, op.c},
                                              {SdpaSlot::kStats, op.d},
                                              {SdpaSlot::kDqkvRows, op.e}};
        for (const SdpaTensor& t : g->tensors) {
          auto it = buffer.find(t.slot);
          if (it == buffer.end()) continue;
          const LayerBuffer& b = program.buffers[it->second];
          EXPECT_LE(SdpaTensorEndBytes(t), b.elements * b.element_bytes)
              << g->name << " " << t.name << " in " << b.name << " (" << WorkloadName(w) << ", d"
              << hd << ")";
        }
        if (w == Workload::kDecode) {
          // K and V caches of kv_len: the runner's memory, filled with random values.
          EXPECT_EQ(g->own_random_bytes, 2 * shape.batch * shape.kv_heads * 4096 * hd * 2);
        }
      }
    }
  }
}

TEST(SdpaGraph, RefusesWhatCudnnsFusedAttentionDoesNotTake) {
  SdpaShape s = Small(4, 2, true);
  s.dtype = DType::kFp32;
  EXPECT_THAT(CheckSdpaShape(s).message(), HasSubstr("dtype"));
  s = Small(4, 2, true);
  s.head_dim = 260;
  EXPECT_THAT(CheckSdpaShape(s).message(), HasSubstr("head_dim 260"));
  s.head_dim = 12;
  EXPECT_THAT(CheckSdpaShape(s).message(), HasSubstr("head_dim 12"));
  s = Small(6, 4, true);
  EXPECT_THAT(CheckSdpaShape(s).message(), HasSubstr("multiple of kv_heads"));
  s = Small(4, 2, false);
  s.q_len = 1;
  EXPECT_TRUE(CheckSdpaShape(s).ok());
  EXPECT_FALSE(SdpaBackwardGraph(s).ok());
  EXPECT_FALSE(SdpaForwardGraph(s, /*training=*/true).ok());
  s.causal = true;
  EXPECT_FALSE(CheckSdpaShape(s).ok());
}

// The checker itself catches what it is there for.
TEST(SdpaGraph, ValidationCatchesBrokenGraphs) {
  const SdpaGraph good = *SdpaForwardGraph(Small(4, 2, true), true);
  SdpaGraph g = good;
  std::swap(g.ops[0], g.ops[2]);  // the scale reads S before the matmul writes it
  EXPECT_THAT(ValidateSdpaGraph(g).message(), HasSubstr("before it is written"));
  g = good;
  for (SdpaTensor& t : g.tensors) {
    if (t.name == "K") t.dims[2] += 8;  // Q·Kᵀ with mismatched inner dims
  }
  EXPECT_THAT(ValidateSdpaGraph(g).message(), HasSubstr("matmul shapes"));
  g = good;
  for (SdpaTensor& t : g.tensors) {
    if (t.name == "V") t.offset_bytes += 2;
  }
  EXPECT_THAT(ValidateSdpaGraph(g).message(), HasSubstr("aligned"));
  g = good;
  g.ops.back().out = g.ops.front().out;  // a tensor written twice
  EXPECT_THAT(ValidateSdpaGraph(g).message(), HasSubstr("written twice"));
}

}  // namespace
}  // namespace wavecrest
