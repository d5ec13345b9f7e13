// A host interpreter of core/sdpa_graph.h's graphs, in double: the reference the graph tests
// (tests/core/sdpa_graph_test.cc) hold against attention written out, and the GPU test of cuDNN's
// attention (tests/gpu_worker/cuda/cudnn_sdpa_gpu_test.cc) holds cuDNN against. Test code only: gtest's
// ADD_FAILURE reports a read of something never written.
#ifndef WAVECREST_TESTS_CORE_SDPA_INTERPRETER_H_
#define WAVECREST_TESTS_CORE_SDPA_INTERPRETER_H_

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/sdpa_graph.h"

namespace wavecrest {

using Idx = std::array<int64_t, 4>;

// Memory: per slot (or per virtual tensor), values by byte address.
class SdpaInterpreter {
 public:
  explicit SdpaInterpreter(std::map<SdpaSlot, std::unordered_map<int64_t, double>>* memory)
      : mem_(memory) {}

  double Get(const SdpaTensor& t, const Idx& i) const {
    if (t.slot == SdpaSlot::kByValue) return t.value;
    const auto& m = Store(t);
    auto it = m.find(Key(t, i));
    if (it == m.end()) {
      ADD_FAILURE() << t.name << " read where nothing was written";
      return 0;
    }
    return it->second;
  }
  void Set(const SdpaTensor& t, const Idx& i, double v) {
    (t.slot == SdpaSlot::kVirtual ? virtual_[t.uid] : (*mem_)[t.slot])[Key(t, i)] = v;
    if (t.slot != SdpaSlot::kVirtual) ++writes_[t.slot][Address(t, i)];
  }
  const std::map<int64_t, int>& Writes(SdpaSlot slot) { return writes_[slot]; }

  void Run(const SdpaGraph& g) {
    for (const SdpaOp& op : g.ops) {
      const SdpaTensor& y = *g.Find(op.out);
      std::vector<const SdpaTensor*> in;
      for (int64_t uid : op.in) in.push_back(g.Find(uid));
      switch (op.kind) {
        case SdpaOpKind::kMatmul:
          ForEach(y.dims, [&](const Idx& i) {
            const SdpaTensor &a = *in[0], &b = *in[1];
            double sum = 0;
            for (int64_t k = 0; k < a.dims[3]; ++k) {
              // Grouped heads: output head h reads operand head h / (H / H_operand).
              sum += Get(a, {i[0], i[1] / (y.dims[1] / a.dims[1]), i[2], k}) *
                     Get(b, {i[0], i[1] / (y.dims[1] / b.dims[1]), k, i[3]});
            }
            Set(y, i, sum);
          });
          break;
        case SdpaOpKind::kPointwise:
          ForEach(y.dims, [&](const Idx& i) {
            auto arg = [&](int n) { return Get(*in[n], Broadcast(i, in[n]->dims)); };
            double v = 0;
            switch (op.mode) {
              case SdpaMode::kMul:
                v = arg(0) * arg(1);
                break;
              case SdpaMode::kAdd:
                v = arg(0) + arg(1);
                break;
              case SdpaMode::kSub:
                v = arg(0) - arg(1);
                break;
              case SdpaMode::kDiv:
                v = arg(0) / arg(1);
                break;
              case SdpaMode::kExp:
                v = std::exp(arg(0));
                break;
              case SdpaMode::kLog:
                v = std::log(arg(0));
                break;
              case SdpaMode::kIdentity:
                v = arg(0);
                break;
              case SdpaMode::kGenIndex:
                v = static_cast<double>(i[op.axis]);
                break;
              case SdpaMode::kCmpGe:
                v = arg(0) >= arg(1) ? 1 : 0;
                break;
              case SdpaMode::kCmpGt:
                v = arg(0) > arg(1) ? 1 : 0;
                break;
              case SdpaMode::kBinarySelect:
                v = arg(2) != 0 ? arg(0) : arg(1);
                break;
              default:
                ADD_FAILURE() << op.name << ": not a pointwise mode";
            }
            Set(y, i, v);
          });
          break;
        case SdpaOpKind::kReduction: {
          const SdpaTensor& x = *in[0];
          std::map<Idx, double> acc;
          ForEach(x.dims, [&](const Idx& i) {
            Idx o = Broadcast(i, y.dims);
            o[1] = y.dims[1] == 1 ? 0 : i[1] / (x.dims[1] / y.dims[1]);
            const double v = Get(x, i);
            auto [it, fresh] = acc.emplace(o, v);
            if (!fresh)
              it->second = op.mode == SdpaMode::kMax ? std::max(it->second, v) : it->second + v;
          });
          for (const auto& [i, v] : acc) Set(y, i, v);
          break;
        }
        case SdpaOpKind::kReshape: {
          // A view: the same memory under other dims and strides.
          const SdpaTensor& x = *in[0];
          std::unordered_map<int64_t, double> by_offset;
          ForEach(x.dims, [&](const Idx& i) { by_offset[Offset(x, i)] = Get(x, i); });
          ForEach(y.dims, [&](const Idx& i) { Set(y, i, by_offset.at(Offset(y, i))); });
          break;
        }
      }
    }
  }

  static void ForEach(const Idx& dims, const std::function<void(const Idx&)>& f) {
    Idx i{};
    for (i[0] = 0; i[0] < dims[0]; ++i[0])
      for (i[1] = 0; i[1] < dims[1]; ++i[1])
        for (i[2] = 0; i[2] < dims[2]; ++i[2])
          for (i[3] = 0; i[3] < dims[3]; ++i[3]) f(i);
  }

 private:
  static Idx Broadcast(Idx i, const Idx& dims) {
    for (int d = 0; d < 4; ++d) {
      if (dims[d] == 1) i[d] = 0;
    }
    return i;
  }
  static int64_t Offset(const SdpaTensor& t, const Idx& i) {
    int64_t o = 0;
    for (int d = 0; d < 4; ++d) o += i[d] * t.strides[d];
    return o;
  }
  // Device tensors by byte address; virtual ones (whose strides cuDNN may ignore, and cuDNN's
  // frontend gives some that overlap) by logical index.
  static int64_t Key(const SdpaTensor& t, const Idx& i) {
    if (t.slot != SdpaSlot::kVirtual) return Address(t, i);
    return ((i[0] * t.dims[1] + i[1]) * t.dims[2] + i[2]) * t.dims[3] + i[3];
  }
  static int64_t Address(const SdpaTensor& t, const Idx& i) {
    return t.offset_bytes + Offset(t, i) * SdpaTypeBytes(t.type);
  }
  const std::unordered_map<int64_t, double>& Store(const SdpaTensor& t) const {
    static const std::unordered_map<int64_t, double> empty;
    if (t.slot == SdpaSlot::kVirtual) {
      auto it = virtual_.find(t.uid);
      return it == virtual_.end() ? empty : it->second;
    }
    auto it = mem_->find(t.slot);
    return it == mem_->end() ? empty : it->second;
  }

  std::map<SdpaSlot, std::unordered_map<int64_t, double>>* mem_;
  std::map<int64_t, std::unordered_map<int64_t, double>> virtual_;
  std::map<SdpaSlot, std::map<int64_t, int>> writes_;
};

}  // namespace wavecrest

#endif  // WAVECREST_TESTS_CORE_SDPA_INTERPRETER_H_
