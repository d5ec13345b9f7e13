// Predictions of plain GEMMs remembered across calls, for GPUs that live as long as the process
// (the catalog's: FindGpu and GpuCatalog() never free a generation, and a refit publishes new
// GpuSpec objects, so a GPU's address names its calibration). Most Analyze calls a launcher fleet
// sends share most GEMMs (the same model again, or a neighbour); PredictGemm was ~15% of the
// server's CPU per Analyze under load (perf, bench/results/profile.txt). Fused attention is not
// remembered (its prediction depends on more than the GemmKey). Thread-safe; bounded: a shard
// that fills up is emptied.
#ifndef WAVECREST_CORE_PREDICTION_MEMO_H_
#define WAVECREST_CORE_PREDICTION_MEMO_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/cost_model.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"

namespace wavecrest {

class PredictionMemo {
 public:
  // At most this many predictions per shard are kept (16 shards).
  explicit PredictionMemo(size_t max_per_shard = 4096) : max_per_shard_(max_per_shard) {}

  // Predict(gpu, gemm), remembered when `gemm` is a plain GEMM. `gpu` must outlive the memo.
  GemmPrediction Predict(const GpuSpec& gpu, const Gemm& gemm);

  // Predictions held now, over all shards (for tests).
  size_t Size() const;
  // Forgets every prediction (a benchmark of the cold path).
  void Clear();

 private:
  struct Key {
    const GpuSpec* gpu;
    GemmKey gemm;
    friend bool operator==(const Key&, const Key&) = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.gpu, k.gemm);
    }
  };
  struct Shard {
    mutable absl::Mutex mu;
    absl::flat_hash_map<Key, GemmPrediction> map ABSL_GUARDED_BY(mu);
  };
  static constexpr size_t kShards = 16;
  const size_t max_per_shard_;
  std::array<Shard, kShards> shards_;
};

// The process's memo for catalog GPUs (what HandleAnalyze uses).
PredictionMemo& CatalogPredictionMemo();

}  // namespace wavecrest

#endif  // WAVECREST_CORE_PREDICTION_MEMO_H_
