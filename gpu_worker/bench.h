// `wavecrest-worker bench`: times a list of GEMMs (CSV), every distinct GEMM of a model step, or a
// model's layers whole (--layers) on this machine's GPU, with no server, and writes JSON. This is
// what runs on a GPU machine that has no wavecrest-server.
#ifndef WAVECREST_GPU_WORKER_BENCH_H_
#define WAVECREST_GPU_WORKER_BENCH_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gpu_worker/backend.h"
#include "nlohmann/json.hpp"

namespace wavecrest {

struct BenchGemm {
  GemmKey key;
  std::vector<std::string> used_by;  // model mode: "qkv forward", ...
};

// CSV: one GEMM per line, `m,n,k[,batch[,layout]]` (batch 1 and layout TN when left out); a header
// line starting with "m" and lines starting with '#' are skipped. Errors name the line.
absl::StatusOr<std::vector<BenchGemm>> ParseGemmCsv(absl::string_view text, DType dtype);

// The distinct GEMMs of one step of the model in `path` (wavecrest JSON or HF config.json); fused
// attention kernels are left out (they are not GEMMs).
absl::StatusOr<std::vector<BenchGemm>> ModelGemms(const std::string& path);

// Times every GEMM; a GEMM that fails is reported with its error and the rest go on. Progress
// lines go to `progress` (may be null). Returns the JSON document.
nlohmann::json RunBench(TimingBackend& backend, const std::vector<BenchGemm>& gemms,
                        const TimingParams& params, std::ostream* progress);

// A table of the JSON document, for people.
std::string BenchTable(const nlohmann::json& doc);

// `bench --model FILE --layers`: the model's layers (its attention and the whole layer,
// core/layers.h).
absl::StatusOr<std::vector<LayerKey>> ModelLayers(const std::string& path);

// Times every layer whole; one that fails is reported with its error and the rest go on. The
// JSON document has "device", "method", "options" and "layers": key, kind, time_s, tflops,
// predicted_sum_s, source, stats (or error).
nlohmann::json RunLayerBench(TimingBackend& backend, const std::vector<LayerKey>& layers,
                             const TimingParams& params, std::ostream* progress);

// A table of a layer bench document, for people.
std::string LayerBenchTable(const nlohmann::json& doc);

// `bench --samples_log FILE`: one JSON line per timed GEMM or layer, the recorded sample stream
// and the rule it was taken under ({"key", "rule": {...}, "sampling_wall_s", "stopped",
// "samples_s": [...]}, and "nvml_mhz" / "probe_mhz": [...], each sample's SM clock, when known).
std::string SamplesLogLine(absl::string_view key, const std::vector<double>& samples_s,
                           const StoppingRule& rule, double sampling_wall_s,
                           absl::string_view stopped, const std::vector<int>& nvml_mhz = {},
                           const std::vector<int>& probe_mhz = {});

// `replay --samples_log FILE`: each recorded stream's own rule, with the target spread and budget
// of `params`, replayed over it (core/timing_stats.h ReplayStop): samples it would take and why,
// and how far its median is from the whole recording's. INVALID_ARGUMENT naming the line for a
// line that is not a record.
absl::StatusOr<std::string> ReplaySamplesLog(absl::string_view log, const TimingParams& params);

}  // namespace wavecrest

#endif  // WAVECREST_GPU_WORKER_BENCH_H_
