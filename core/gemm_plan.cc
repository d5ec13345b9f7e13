#include "core/gemm_plan.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/timing_stats.h"

namespace wavecrest {
namespace {

// a·b, or false when it overflows int64.
bool Mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool Add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

bool Supported(DType d, int cc) {
  switch (d) {
    case DType::kFp16:
    case DType::kFp32:
      return true;
    case DType::kBf16:
    case DType::kTf32:
      return cc >= 80;
    case DType::kFp8E4M3:
      return cc >= 89;
  }
  return false;
}

absl::Status TooBig(const GemmKey& key, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(GemmKeyString(key), ": ", what, "; the worker takes dimensions up to ",
                   kMaxWorkerGemmDim, " and up to ", kMaxWorkerGemmFlops, " FLOPs per GEMM"));
}

// Ada and Hopper: TN only. The NN and NT GEMMs of a backward pass run, as in Transformer Engine,
// as TN on transposed FP8 copies of the operands; Blackwell takes every layout.
void PlanFp8Layout(const GemmKey& key, const DeviceLimits& device, GemmPlan& p) {
  if (device.compute_capability < 100 && key.layout != Layout::kTN) {
    p.fp8_transposed_copies = true;
    p.trans_a = true;
    p.trans_b = false;
    p.run_layout = Layout::kTN;
  }
  // Transformer Engine's default recipe: fast accumulation for the forward GEMM, the split
  // (periodically promoted) accumulator for dgrad and wgrad (_2X_ACC_FPROP = False,
  // _2X_ACC_DGRAD = _2X_ACC_WGRAD = True in transformer_engine/pytorch/module/base.py).
  p.fp8_fast_accumulation = key.layout == Layout::kTN;
}

// cuBLASLt's FP8 kernels need 16-byte aligned leading dimensions: 16 FP8 elements for A and B,
// 8 BF16 elements for D.
absl::Status CheckFp8LeadingDims(const GemmKey& key, const GemmPlan& p) {
  struct Ld {
    const char* name;
    int64_t ld, multiple;
  };
  for (const Ld& l : {Ld{"A", p.lda, 16}, Ld{"B", p.ldb, 16}, Ld{"D (BF16)", p.ldd, 8}}) {
    if (l.ld % l.multiple != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          GemmKeyString(key), ": FP8 GEMMs need 16-byte aligned leading dimensions; ", l.name,
          "'s is ", l.ld, " elements, not a multiple of ", l.multiple, " (pad it to ",
          (l.ld + l.multiple - 1) / l.multiple * l.multiple, ")"));
    }
  }
  return absl::OkStatus();
}

// The operands' element and byte counts (A, B, D, and one input set of the three), refused when
// they overflow 64 bits.
absl::Status SizeOperands(const GemmKey& key, GemmPlan& p) {
  const int64_t a_rows = p.trans_a ? p.k : p.m, a_cols = p.trans_a ? p.m : p.k;
  const int64_t b_rows = p.trans_b ? p.n : p.k, b_cols = p.trans_b ? p.k : p.n;
  const int64_t in = DTypeBytes(key.dtype), out = OutputDTypeBytes(key.dtype);
  int64_t set = 0;
  if (!Mul(a_rows, a_cols, &p.a_elems) || !Mul(b_rows, b_cols, &p.b_elems) ||
      !Mul(p.m, p.n, &p.d_elems) || !Mul(p.a_elems, p.batch, &p.a_bytes) ||
      !Mul(p.a_bytes, in, &p.a_bytes) || !Mul(p.b_elems, p.batch, &p.b_bytes) ||
      !Mul(p.b_bytes, in, &p.b_bytes) || !Mul(p.d_elems, p.batch, &p.d_bytes) ||
      !Mul(p.d_bytes, out, &p.d_bytes) || !Add(p.a_bytes, p.b_bytes, &set) ||
      !Add(set, p.d_bytes, &set)) {
    return TooBig(key, "its operands' byte sizes overflow 64 bits");
  }
  p.set_bytes = set;
  return absl::OkStatus();
}

// The workspace and the input sets that fit the device's free memory (p.set_bytes known):
// RESOURCE_EXHAUSTED when one set does not fit, or a cold-L2 figure would need more sets than fit.
absl::Status PlaceInDeviceMemory(const GemmKey& key, const DeviceLimits& device,
                                 const EngineOptions& options, GemmPlan& p) {
  const int64_t set = p.set_bytes;
  p.workspace_bytes = FrameworkWorkspaceBytes(device.compute_capability);
  // Transposed FP8 copies double A and B once (they are made, then timed as the operands).
  int64_t needed = set;
  if (p.fp8_transposed_copies && !Add(needed, p.a_bytes + p.b_bytes, &needed)) {
    return TooBig(key, "its operands' byte sizes overflow 64 bits");
  }
  const int64_t usable = device.free_bytes - device.margin_bytes - p.workspace_bytes;
  if (needed > usable) {
    return absl::ResourceExhaustedError(
        absl::StrCat(GemmKeyString(key), " needs ", needed >> 20, " MiB of device memory; ",
                     std::max<int64_t>(usable, 0) >> 20, " MiB are free"));
  }
  p.sets = InputSets(set, device.l2_bytes, usable, options.warm_l2);
  // Memory too short for a cold working set: refuse rather than time warm and call it cold. (When
  // the set count is the limit, the operands are so small, under 2·L2 / kMaxInputSets, that no
  // rotation evicts L2: they are timed warm and labelled so.)
  if (!options.warm_l2 && device.l2_bytes > 0 && p.sets < kMaxInputSets &&
      static_cast<double>(p.sets) * static_cast<double>(set) < 2.0 * device.l2_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(GemmKeyString(key), ": a cold-L2 figure needs input sets covering twice L2 (",
                     (2 * device.l2_bytes) >> 20, " MiB); only ", p.sets, " of ", set >> 10,
                     " KiB fit in free device memory. Free device memory, or ask for warm_l2"));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t FrameworkWorkspaceBytes(int compute_capability) {
  return compute_capability >= 90 ? int64_t{32} << 20 : int64_t{4} << 20;
}

absl::StatusOr<GemmPlan> PlanGemm(const GemmKey& key, const DeviceLimits& device,
                                  const EngineOptions& options) {
  const GemmShape& s = key.shape;
  for (int64_t v : {s.m, s.n, s.k, s.batch}) {
    if (v < 1 || v > kMaxWorkerGemmDim) return TooBig(key, "a dimension is out of range");
  }
  if (!(GemmFlops(s) <= kMaxWorkerGemmFlops)) return TooBig(key, "too many FLOPs");
  if (!Supported(key.dtype, device.compute_capability)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "compute capability ", device.compute_capability / 10, ".", device.compute_capability % 10,
        " cannot run ", DTypeName(key.dtype), " GEMMs on tensor cores"));
  }
  GemmPlan p;
  // Row-major C[M×N] = op(A)·op(B) runs as column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLAS m = N, n = M.
  p.m = s.n;
  p.n = s.m;
  p.k = s.k;
  p.batch = s.batch;
  p.trans_a = key.layout == Layout::kTN;
  p.trans_b = key.layout == Layout::kNT;
  p.run_layout = key.layout;
  p.fp8 = key.dtype == DType::kFp8E4M3;
  if (p.fp8) PlanFp8Layout(key, device, p);
  p.lda = p.trans_a ? p.k : p.m;
  p.ldb = p.trans_b ? p.n : p.k;
  p.ldd = p.m;
  if (p.fp8) {
    if (absl::Status st = CheckFp8LeadingDims(key, p); !st.ok()) return st;
  }
  if (absl::Status st = SizeOperands(key, p); !st.ok()) return st;
  if (absl::Status st = PlaceInDeviceMemory(key, device, options, p); !st.ok()) return st;
  return p;
}

SampleSchedule ScheduleSamples(double launch_s, int sets, int64_t set_bytes, int64_t l2_bytes,
                               const EngineOptions& options, bool gpu_hot) {
  SampleSchedule s;
  const int max_launches = std::max(options.max_launches_per_sample, 1);
  int launches = LaunchesPerSample(launch_s, options.sample_target_s, max_launches);
  if (sets > 1) {
    // Every replay starts at set 0: it must go round all the sets, or the ones it never reaches
    // are the only ones evicted and the first ones stay warm.
    launches = std::max(launches, sets);
    launches = (launches + sets - 1) / sets * sets;
    while (launches > max_launches && launches > sets) launches -= sets;
  }
  s.launches_per_sample = launches;
  s.sets_used = std::max(1, std::min(sets, launches));
  s.cold_l2 = !options.warm_l2 && l2_bytes > 0 &&
              static_cast<double>(s.sets_used) * static_cast<double>(set_bytes) >=
                  2.0 * static_cast<double>(l2_bytes);
  const double replay_s = std::max(launch_s, 1e-9) * launches;
  // Steady power and temperature need time: from cold, a warm-up of about 100 ms (50 ms for
  // short launches) and at least 50 ms sampled. A hot GPU (the previous GEMM of a sweep just ran)
  // is already there: a short warm-up loads the kernel and the graph, and the stopping rule ends
  // the sampling once its short minimum is reached.
  const bool long_launch = launch_s >= 100e-6;
  s.hot = gpu_hot && options.hot_window_s > 0;
  if (s.hot) s.hot_window_s = options.hot_window_s;
  s.warmup_s = s.hot ? options.hot_warmup_s : (long_launch ? 0.1 : 0.05);
  s.warmup_replays = static_cast<int>(std::clamp(std::ceil(s.warmup_s / replay_s), 1.0, 2000.0));
  s.min_sampled_s = s.hot ? options.hot_min_sampled_s : 0.05;
  s.min_samples = 10;
  return s;
}

std::string ScheduleNote(const SampleSchedule& s) {
  if (!s.hot) return "";
  std::string note = absl::StrCat("; hot GPU (timed work within ", s.hot_window_s, " s): ",
                                  std::lround(s.warmup_s * 1e3), " ms warm-up");
  if (s.min_sampled_s > 0) {
    absl::StrAppend(&note, ", at least ", std::lround(s.min_sampled_s * 1e3), " ms sampled");
  }
  return note;
}

double ScheduleLeastSeconds(const SampleSchedule& s, double launch_s,
                            double per_window_overhead_s) {
  const double replay_s = launch_s * s.launches_per_sample;
  const double by_time = std::ceil(s.min_sampled_s / std::max(replay_s, 1e-12));
  const int samples = static_cast<int>(
      std::max({static_cast<double>(s.min_samples), static_cast<double>(kMinSamplesForMedian),
                by_time}));
  int windows = 0;
  for (int taken = 0; taken < samples; ++windows) {
    taken += WindowSamples(s, replay_s, taken, taken * replay_s, samples);
  }
  return s.warmup_replays * replay_s + samples * replay_s + windows * per_window_overhead_s;
}

int WindowSamples(const SampleSchedule& s, double replay_s, int taken, double sampled_s,
                  int max_samples) {
  replay_s = std::max(replay_s, 1e-9);
  // Replays to cover `seconds` (a rounding error of the division is not one more replay).
  auto replays = [&](double seconds) { return std::ceil(seconds / replay_s - 1e-6); };
  double want = replays(kWindowTargetS);
  if (taken < s.min_samples || sampled_s < s.min_sampled_s) {
    const double by_time = replays(s.min_sampled_s - sampled_s);
    want = std::max({want, static_cast<double>(s.min_samples - taken), by_time});
  }
  want = std::max(want, static_cast<double>(kMinWindow));
  want = std::min({want, static_cast<double>(kMaxWindow), std::floor(kMaxWindowS / replay_s)});
  const int left = std::max(max_samples - taken, 1);
  return std::clamp(static_cast<int>(want), 1, left);
}

absl::Status CheckWatchdog(double launch_s, const EngineOptions& options, const GemmKey& key) {
  if (options.watchdog_s <= 0) return absl::OkStatus();
  // Progress goes to the server after every replay; a replay is at least one launch. Keep one
  // launch under half the watchdog, with the correctness check's own launch in mind.
  if (launch_s > 0.5 * options.watchdog_s) {
    return absl::FailedPreconditionError(absl::StrCat(
        GemmKeyString(key), ": one launch takes about ", launch_s,
        " s, more than half the server's watchdog (", options.watchdog_s,
        " s): it cannot be timed without being killed; raise --worker_job_timeout_s or split it"));
  }
  return absl::OkStatus();
}

std::string EngineMethod(const GemmPlan& plan, const SampleSchedule& schedule,
                         const EngineOptions& options) {
  std::string m = absl::StrCat(kCublasLtMethod);
  if (options.warm_l2) {
    absl::StrAppend(&m, " warm-L2");
  } else if (schedule.cold_l2) {
    absl::StrAppend(&m, " cold-L2");
  } else {
    absl::StrAppend(&m, " warm-L2 (cold not reachable)");
  }
  absl::StrAppend(&m, options.autotune ? " autotune" : " heuristic", " ws",
                  plan.workspace_bytes >> 20, "MiB");
  if (plan.fp8)
    absl::StrAppend(&m, plan.fp8_fast_accumulation ? " fp8-fast-accum" : " fp8-split-accum");
  if (plan.fp8_transposed_copies) absl::StrAppend(&m, " fp8-transposed-copies");
  return m;
}

}  // namespace wavecrest
