// The CLI's commands, behind main.cc's flag parsing so that tests can run them in-process.
#ifndef WAVECREST_CLIENT_CLI_H_
#define WAVECREST_CLIENT_CLI_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wavecrest/v1/model.pb.h"

namespace wavecrest {

struct CliOptions {
  std::string command;
  std::vector<std::string> args;
  std::string model;
  std::string gpu = "h100-sxm";
  int64_t seq = 0;
  int64_t micro_batch = 0;
  int64_t tp = 0;
  int64_t pp = 0;          // pipeline stages override
  int64_t cp = 0;          // context-parallel ranks override
  int64_t ep = 0;          // expert-parallel ranks override
  int64_t etp = 0;         // the experts' tensor-parallel degree override
  double capacity_factor = 0;  // the experts' capacity factor override
  double routing_skew = 0;     // dropless routing's skew over expert-parallel ranks override
  int64_t dp = 0;          // data-parallel replicas (memory estimate)
  std::string tp_options;  // recommend: "2,4,8"
  // analyze: the training run (any of them set: the step's breakdown)
  int64_t gpus = 0;
  int64_t global_batch = 0;
  int64_t interleave = 0;
  bool sequence_parallel = false;
  std::string recompute;  // none, selective, full, op
  double dp_overlap = 0;
  double tp_overlap = 0;
  bool no_pp_overlap = false;
  bool overlap_grad_reduce = false;
  bool zero3_prefetch = false;
  bool eager = false;      // eager PyTorch's unfused elementwise kernels
  bool rope_unfused = false;  // the rotary embedding's alone (TorchTitan's complex RoPE)
  bool moe_unfused_ops = false;  // Megatron-Core's unfused expert ops (biases, clamped GLU)
  bool recompute_moe = false;    // Megatron-Core's recompute_modules "moe"
  bool recompute_mla_up_proj = false;  // ... and "mla_up_proj"
  int64_t mtp_layers = 0;        // multi-token prediction modules trained beside the model
  int64_t fsdp_shard = 0;  // hybrid sharding's group size (0 = FSDP over all)
  bool no_reshard_after_forward = false;
  bool ep_overlap = false;
  std::string network;
  std::string ep_dispatcher;
  bool fp8_param_gather = false;
  std::string fp8_recipe;  // tensorwise (default) or rowwise
  std::string loss;        // fused (default) or eager
  std::string cp_ring;     // te (default) or torch
  std::string flop_count;  // full (default) or causal
  double moe_host_ms = -1;  // < 0: the planner's default
  double sustained_stretch = 0;  // 0: the GPU's (RunConfig.sustained_gemm_stretch)
  int zero_stage = 0;
  bool plan = false;
  bool keep_degrees = false;  // with --plan: hold the model's parallel degrees
  double tokens = 0;          // tokens to train on: time to train and GPU-hours
  bool offload_activations = false;
  int gradient_bytes = 0;
  std::string dtype;
  std::string attention;
  std::string workload;
  int64_t kv_cache = 0;
  std::string format = "table";
  std::string server;
  // TLS to the server (ca; cert and key for mutual TLS) and a bearer token.
  std::string tls_ca, tls_cert, tls_key, token;
  // 0: 60 s, or for a recommend or sweep that may measure (mode auto or measured) the measuring
  // budget (--max-gpu-seconds, default 60) plus 30 s, so the server answers before the client
  // gives up (EffectiveDeadline).
  double deadline_s = 0;
  std::string gemm;    // time: "MxNxK[xBATCH],..."
  std::string layout;  // time: TN, NN, NT
  std::string mode;    // auto, measured, predicted
  bool autotune = false;
  bool warm_l2 = false;
  // time --layers: layers whole instead of GEMMs; kinds "fused_attention,transformer_layer" (empty
  // = the model's attention and the whole layer)
  bool layers = false;
  std::string layer_kinds;
  std::string routing;  // time --layers: a MoE layer's routing
  // recommend
  double param_tolerance = 0;  // 0 = 0.02
  std::string vary;            // "heads,hidden,ffn,vocab"
  std::string allowed_head_dims;
  int64_t min_heads = 0;
  int64_t max_heads = 0;
  bool keep_layers = false;
  bool kv_divisible = false;  // recommend: no KV replication
  int64_t head_dim_multiple = 0;      // recommend: 0 = the server's default (16)
  int64_t max_candidates = 0;
  int top = 0;
  int measure_top_k = 0;
  std::string export_pick;  // recommend: print only this candidate's model: "N" (a rank) or "best"
  std::string export_format = "hf";  // hf | wavecrest
  double max_gpu_seconds = 0;
  // calibrate
  // The first file that covers a GPU and dtype is fitted; later ones covering it are checks.
  std::string fit =
      "data/measurements/h100-torch-gemm-sweep.csv,data/measurements/h200-torch-gemm-sweep.csv,"
      "data/measurements/xla-gemm-perf-table.csv";
  std::string anchor = "data/measurements/mamf.csv";
  std::string check =
      "data/measurements/cookbook-a100.csv,data/measurements/deepgemm-h800-fp8.csv";
  std::string ratios = "data/measurements/h100-swiglu-ratios.csv";
  std::string attention_data = "data/measurements/fa3-h100-cudnn-attention.csv";
  std::string attention_check =
      "data/measurements/cudnn-fe-h200-prefill.csv,data/measurements/cudnn-fe-b200-prefill.csv,"
      "data/measurements/cudnn-fe-a100-prefill.csv";
  std::string out;       // calibration file to write
  std::string report;    // report file to write (also printed)
  std::string evaluate;  // measurement file(s) to score the current calibration on
  int folds = 5;
  std::string calibration;     // a calibration file to load before the command runs
  bool internal = false;       // devices: workers' paths and PIDs too (admin)
  bool gpu_given = false;      // --gpu was on the command line (export-measurements, recalibrate)
  int64_t min_rows = 0;        // recalibrate
  std::string health_service;  // health: the one service to check
  bool health_service_given = false;  // health: --service was given (it may be "", overall)
  // sweep (--vary names the one dimension; --gemm the GEMM for m, n, k)
  int64_t from = 0, to = 0, step = 0;
  std::string svg;  // write the plot here
};

// Runs one command; returns the process exit code (0, 2 for usage, 10 + status code on failure).
int RunCli(const CliOptions& options, std::ostream& out, std::ostream& err);

inline constexpr double kDefaultDeadlineS = 60;
// A call that may measure waits for its measuring budget and this much more (ranking, the answer,
// a queue ahead of it).
inline constexpr double kDeadlineAfterBudgetS = 30;
// The deadline of each RPC: --deadline, or when 0 one derived from the command and its budget.
double EffectiveDeadline(const CliOptions& o);

// Loads --model and applies the override flags.
absl::StatusOr<v1::ModelSpec> LoadSpecWithOverrides(const CliOptions& o);

// 10 + the status code, or 0.
int ExitCodeFor(const absl::Status& status);

}  // namespace wavecrest

#endif  // WAVECREST_CLIENT_CLI_H_
