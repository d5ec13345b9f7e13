// What the cuBLASLt timing engine will do for one GEMM, decided without a GPU so that every
// decision is tested on any machine (gpu_worker/cuda/cublaslt_backend.cc carries it out):
// operand sizes (overflow-checked), the FP8 layout mapping, the workspace, how many input sets
// rotate and whether that makes L2 cold, the sampling schedule, what the watchdog allows, and the
// method string that names all of it.
#ifndef WAVECREST_CORE_GEMM_PLAN_H_
#define WAVECREST_CORE_GEMM_PLAN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/cost_model.h"
#include "core/gemm.h"

namespace wavecrest {

// Largest operands one worker accepts, whatever the server sent (the server's caps, again).
inline constexpr int64_t kMaxWorkerGemmDim = (int64_t{1} << 31) - 1;
inline constexpr double kMaxWorkerGemmFlops = 1e17;

struct DeviceLimits {
  int compute_capability = 0;  // 90 for 9.0
  int64_t l2_bytes = 0;
  int64_t free_bytes = 0;                     // free device memory now
  int64_t margin_bytes = int64_t{512} << 20;  // left free for the context and kernels
};

// How the engine times (the worker's TimingParams extend it with their hooks).
struct EngineOptions {
  bool warm_l2 = false;
  bool autotune = false;
  int top_k = 8;
  double target_spread = 0.01;    // stop sampling below this relative spread
  double max_seconds = 2.0;       // sampling budget per algorithm
  double watchdog_s = 0;          // the server kills a worker silent this long (0 = none)
  double sample_target_s = 1e-3;  // one graph replay lasts about this long
  int max_launches_per_sample = 1000;
  // A GPU that finished timed work less than this long ago is hot: its clocks, power and
  // temperature are where the previous GEMM left them, so a GEMM of a sweep gets a short warm-up
  // and no long minimum of sampled time (ScheduleSamples). 0: every GEMM gets the cold schedule.
  double hot_window_s = 2.0;
  // The hot schedule: a GEMM's warm-up (graph and kernel loaded, the GPU already at its power
  // state) and its least sampled time. Samples run back to back in windows (one wait per window),
  // so a hot GPU's clock does not swing between samples as it did with a wait after each.
  double hot_warmup_s = 0.005;
  double hot_min_sampled_s = 0.01;
};

struct GemmPlan {
  // cuBLAS (column-major) view of the timed GEMM: D[m×n] = op(A)[m×k]·op(B)[k×n], `batch` times.
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t lda = 0, ldb = 0, ldd = 0;
  int64_t a_elems = 0, b_elems = 0, d_elems = 0;  // per batch entry
  int64_t a_bytes = 0, b_bytes = 0, d_bytes = 0;  // all batch entries
  int64_t set_bytes = 0;                          // one input set (A, B and D)
  // FP8 on Ada/Hopper runs only as TN: for NN and NT the engine times the TN GEMM on transposed
  // FP8 copies, as Transformer Engine keeps them (the copies are made once, not timed).
  bool fp8_transposed_copies = false;
  bool fp8 = false;
  bool fp8_fast_accumulation = false;  // CUBLASLT_MATMUL_DESC_FAST_ACCUM: forward only, as TE
  Layout run_layout = Layout::kTN;     // the layout the buffers hold and the call runs
  int64_t workspace_bytes = 0;
  int sets = 1;  // input sets allocated and rotated
};

// The plan of `key` on a device, or why it cannot be timed: INVALID_ARGUMENT for sizes beyond the
// worker's caps or that overflow, FAILED_PRECONDITION for a dtype or layout the device cannot run
// (and FP8 dimensions that break cuBLASLt's 16-byte rule, named), RESOURCE_EXHAUSTED when the
// operands do not fit in free memory, or when a cold-L2 figure is asked for and the input sets that
// fit in memory cannot cover twice L2. Checked before any allocation.
absl::StatusOr<GemmPlan> PlanGemm(const GemmKey& key, const DeviceLimits& device,
                                  const EngineOptions& options);

// The workspace a framework gives cuBLASLt: 32 MiB on Hopper and later, 4 MiB before (PyTorch's
// defaults), so that the heuristic's first choice is what a framework would get.
int64_t FrameworkWorkspaceBytes(int compute_capability);

// How one algorithm is sampled, once the correctness check told how long a launch takes.
struct SampleSchedule {
  int launches_per_sample = 1;  // a multiple of the sets in use, so every replay covers them all
  int sets_used = 1;            // min(sets, launches): what one replay actually touches
  bool cold_l2 = false;         // the sets one replay touches span at least 2 × L2
  // Cold: about 100 ms (50 ms for sub-100 µs launches); hot: EngineOptions::hot_warmup_s. At
  // least 1.
  int warmup_replays = 1;
  // At least this much sampled time (steady power and clocks): cold, 50 ms; hot,
  // EngineOptions::hot_min_sampled_s. The stopping rule then decides (core/timing_stats.h).
  double min_sampled_s = 0;
  int min_samples = 10;
  bool hot = false;  // scheduled as a hot GPU's (EngineOptions::hot_window_s)
  double hot_window_s = 0;  // that window, when hot
  double warmup_s = 0;      // the warm-up aimed at (warmup_replays replays of about this)
};
// `gpu_hot`: the GPU finished timed work within options.hot_window_s. A sweep's GEMMs then cost
// about 20 ms each: only the first GEMM of a sweep warms the GPU up (issue 35's target is 0.05 s
// per GEMM of bench/gpu/shapes.csv, the process included).
SampleSchedule ScheduleSamples(double launch_s, int sets, int64_t set_bytes, int64_t l2_bytes,
                               const EngineOptions& options, bool gpu_hot = false);
// What the timing's stop_rule adds after DescribeStop: "" for the cold schedule; for a hot one
// "; hot GPU (timed work within 2 s): 5 ms warm-up, at least 10 ms sampled".
std::string ScheduleNote(const SampleSchedule& s);
// The least time the schedule takes on the GPU: its warm-up plus the fewest samples its rule
// allows (at least min_samples and kMinSamplesForMedian, and min_sampled_s of sampled time), each
// a replay, plus `per_window_overhead_s` (the blocking kernel and the wait) for each window they
// take (WindowSamples). What allocation, the correctness check and graph capture add is not in it.
double ScheduleLeastSeconds(const SampleSchedule& s, double launch_s, double per_window_overhead_s);

// Samples are taken in windows: the replays of a window run back to back, an event between each,
// and the host waits once at its end, where the stopping rule looks. How many samples the next
// window takes when `taken` have been taken, `sampled_s` seconds of replays in all: the first
// reaches the rule's minimums (min_samples, kMinSamplesForMedian, min_sampled_s), later ones
// about kWindowTargetS of replays (at least kMinWindow); never past max_samples, never more than
// kMaxWindow samples or kMaxWindowS of replays (progress is reported after each window).
inline constexpr int kMinWindow = 4;
inline constexpr int kMaxWindow = 64;
inline constexpr double kWindowTargetS = 0.005;
inline constexpr double kMaxWindowS = 0.25;
int WindowSamples(const SampleSchedule& s, double replay_s, int taken, double sampled_s,
                  int max_samples);

// Things timed together (GEMMs of a batch, layers of a request) are sampled in rounds, one window
// each, every one in every round, so that all their samples spread over the same stretch of
// clocks and power: the H200 lent on 2026-11-26 moved a GEMM 5-20% between back-to-back processes
// as its power controller stepped the clock over hundreds of milliseconds, and an item that left
// the rounds early kept only the first of them. Rounds go on until every item's stopping rule is
// met (after at least kMinInterleavedRounds) or the batch's sampling budget is spent.
inline constexpr int kMinInterleavedRounds = 3;
inline bool AnotherRound(int rounds, bool all_met, double elapsed_s, double budget_s) {
  return rounds < kMinInterleavedRounds || (!all_met && elapsed_s < budget_s);
}

// Whether one launch of this length can be timed under the watchdog: the engine reports progress
// after every replay, so one replay (at least one launch) must fit well inside it. OK, or
// FAILED_PRECONDITION saying the GEMM is too long for the server's watchdog.
absl::Status CheckWatchdog(double launch_s, const EngineOptions& options, const GemmKey& key);

// "cublaslt-timing-v2 cold-L2 heuristic ws32MiB" (+ " fp8-fast-accum" or " fp8-split-accum",
// " fp8-transposed-copies"; "warm-L2 (cold not reachable)"): the state achieved, not the one asked.
std::string EngineMethod(const GemmPlan& plan, const SampleSchedule& schedule,
                         const EngineOptions& options);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_GEMM_PLAN_H_
