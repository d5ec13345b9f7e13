#include "core/prediction_memo.h"

#include "absl/hash/hash.h"

namespace wavecrest {

GemmPrediction PredictionMemo::Predict(const GpuSpec& gpu, const Gemm& gemm) {
  if (gemm.fused_attention) return wavecrest::Predict(gpu, gemm);
  const Key key{&gpu, gemm.key()};
  Shard& shard = shards_[absl::HashOf(key) % kShards];
  {
    absl::ReaderMutexLock lock(&shard.mu);
    if (auto it = shard.map.find(key); it != shard.map.end()) return it->second;
  }
  GemmPrediction p = PredictGemm(gpu, key.gemm);
  absl::MutexLock lock(&shard.mu);
  if (shard.map.size() >= max_per_shard_) shard.map.clear();
  shard.map.emplace(key, p);
  return p;
}

size_t PredictionMemo::Size() const {
  size_t n = 0;
  for (const Shard& s : shards_) {
    absl::ReaderMutexLock lock(&s.mu);
    n += s.map.size();
  }
  return n;
}

void PredictionMemo::Clear() {
  for (Shard& s : shards_) {
    absl::MutexLock lock(&s.mu);
    s.map.clear();
  }
}

PredictionMemo& CatalogPredictionMemo() {
  static PredictionMemo* memo = new PredictionMemo();
  return *memo;
}

}  // namespace wavecrest
