#include "client/args.h"

#include <algorithm>
#include <map>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "service/errors.h"
#include "wavecrest_version.h"

namespace wavecrest {
namespace {

// Flags every command that talks to a server takes.
const std::vector<std::string> kConnection = {"server",  "deadline", "tls_ca", "tls_cert",
                                              "tls_key", "token",    "format"};
// A model spec and its overrides.
const std::vector<std::string> kModel = {"model", "seq",   "micro_batch", "tp",       "pp",
                                         "cp",    "ep",    "etp",         "capacity_factor", "routing_skew", "dp", "dtype",
                                         "attention",
                                         "workload", "kv_cache"};

std::vector<std::string> Join(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// analyze: a model step's GEMMs, offline or through a server; a training run with --gpus.
CommandInfo AnalyzeCommand() {
  const std::vector<std::string> own = {
      "gpu", "calibration", "gpus", "global_batch", "interleave", "sequence_parallel",
      "recompute", "dp_overlap", "overlap_grad_reduce", "tp_overlap", "no_pp_overlap",
      "network", "zero_stage", "zero3_prefetch", "no_reshard_after_forward", "ep_overlap",
      "ep_dispatcher", "fp8_param_gather", "fp8_recipe", "loss", "cp_ring", "flop_count", "moe_host_ms", "sustained_stretch",
      "plan", "keep_degrees", "tokens", "offload_activations", "gradient_bytes",
      "eager", "rope_unfused", "moe_unfused_ops", "recompute_moe", "recompute_mla_up_proj", "mtp_layers",
      "fsdp_shard"};
  return {"analyze",
          "the GEMMs of one step of a model, their alignment, predicted cost and the paper's rules "
          "the model breaks (offline, or through --server)",
          "wavecrest analyze --model FILE [--gpu NAME] [--gpus N --global-batch B ...] [flags]",
          Join({kConnection, kModel, own})};
}

// time: GEMMs or layers timed through a server.
CommandInfo TimeCommand() {
  return {
      "time",
      "time GEMMs (--gemm MxNxK,...), every GEMM of a model step (--model), or a model's layers "
      "whole (--model --layers: attention and the whole layer, beside the sum of their parts) "
      "through --server: MEASURED on a GPU worker, CACHED, or PREDICTED, each row says which",
      "wavecrest time --server ADDR (--gemm MxNxK[,...] | --model FILE [--layers]) [flags]",
      Join({kConnection,
            kModel,
            {"gpu", "gemm", "layout", "mode", "autotune", "warm_l2", "layers", "layer_kinds",
             "routing"}})};
}

// recommend: nearby shapes ranked, with the reasons.
CommandInfo RecommendCommand() {
  return {
      "recommend",
      "nearby shapes at about the same parameter count, ranked by efficiency, with the reasons; "
      "offline with --mode predicted, or through --server (measured on a worker)",
      "wavecrest recommend --model FILE [--gpu NAME] [flags]",
      Join({kConnection,
            kModel,
            {"gpu", "mode", "param_tolerance", "vary", "allowed_head_dims", "min_heads",
             "max_heads", "keep_layers", "max_candidates", "top", "measure_top_k",
             "max_gpu_seconds", "tp_options", "kv_divisible", "head_dim_multiple", "calibration",
             "export", "export_format"}})};
}

// sweep: one dimension of a model or a GEMM, point by point.
CommandInfo SweepCommand() {
  return {
      "sweep",
      "throughput along one dimension (--vary hidden|heads|kv_heads|ffn|vocab|seq|micro_batch|"
      "tp of --model, or m|n|k of --gemm) from --from to --to by --step, with the rules each "
      "point breaks; --svg FILE writes the plot; predicted unless --mode",
      "wavecrest sweep (--model FILE | --gemm MxNxK) --vary DIM --from A --to B --step S [flags]",
      Join({kConnection,
            kModel,
            {"gpu", "gemm", "layout", "vary", "from", "to", "step", "svg", "mode",
             "max_gpu_seconds", "calibration"}})};
}

std::vector<CommandInfo> BuildCommands() {
  return {
      AnalyzeCommand(),
      TimeCommand(),
      {"devices", "the worker devices a server measures on and the GPUs it can predict for",
       "wavecrest devices --server ADDR [--internal]", Join({kConnection, {"internal"}})},
      RecommendCommand(),
      SweepCommand(),
      {"health",
       "the server's health: overall, Advisor (can answer), measure (a GPU worker is up); exit 0 "
       "only when all are SERVING; with --service, that one service",
       "wavecrest health --server ADDR [--service NAME]", Join({kConnection, {"service"}})},
      {"calibrate",
       "fit the cost model to published or exported measurements, cross-validate, report; --out "
       "writes the calibration file, --evaluate scores the current one on a CSV",
       "wavecrest calibrate --fit CSV[,...] [--attention_data CSV[,...]] [--out FILE] [flags]",
       {"format", "fit", "anchor", "check", "ratios", "attention_data", "attention_check", "out",
        "report", "evaluate", "folds", "calibration"}},
      {"export-measurements",
       "the GPU measurements in a server's measurement store, as the measurement CSV (--out FILE, "
       "or stdout); feed them to calibrate --fit",
       "wavecrest export-measurements --server ADDR [--gpu NAME] [--out FILE]",
       Join({kConnection, {"gpu", "out"}})},
      {"recalibrate", "ask a server to refit its device kinds from its own measurements",
       "wavecrest recalibrate --server ADDR [--gpu NAME] [--min_rows N]",
       Join({kConnection, {"gpu", "min_rows"}})},
  };
}

// Edit distance with adjacent transpositions (optimal string alignment): "modle" is one edit
// from "model".
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The known name nearest to `name` (at most 2 edits), preferring the command's own flags.
std::string Nearest(const std::string& name, const CommandInfo* command,
                    const std::set<std::string>& known) {
  std::string nearest;
  size_t best = 3;
  auto consider = [&](const std::string& k) {
    const size_t d = EditDistance(name, k);
    if (d < best) best = d, nearest = k;
  };
  if (command != nullptr) {
    for (const std::string& k : command->flags) consider(k);
  }
  if (nearest.empty()) {
    for (const std::string& k : known) consider(k);
  }
  return nearest;
}

std::set<std::string> AllFlagNames() {
  std::set<std::string> names;
  for (const CommandInfo& c : Commands()) names.insert(c.flags.begin(), c.flags.end());
  return names;
}

std::string Dashed(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

absl::Status UsageError(const std::string& flag, const std::string& message) {
  return FieldError(flag, message);
}

}  // namespace

const std::vector<CommandInfo>& Commands() {
  static const std::vector<CommandInfo>* commands = new std::vector<CommandInfo>(BuildCommands());
  return *commands;
}

const CommandInfo* FindCommand(const std::string& name) {
  for (const CommandInfo& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

namespace {

// A flag as written: its name in the '_' spelling without "--", its value if given.
struct FlagItem {
  std::string name;
  std::string value;
  bool has_value = false;
  bool negated = false;  // --noflag
};

// The flag `item` names; --noflag and --no-flag name the boolean flag, negated.
absl::CommandLineFlag* FindFlag(FlagItem& item) {
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(item.name);
  if (flag == nullptr && absl::StartsWith(item.name, "no")) {
    const std::string positive_name = item.name.substr(item.name[2] == '_' ? 3 : 2);
    absl::CommandLineFlag* positive = absl::FindCommandLineFlag(positive_name);
    if (positive != nullptr && positive->IsOfType<bool>() && !item.has_value) {
      item.name = positive_name;
      item.negated = true;
      flag = positive;
    }
  }
  return flag;
}

// Each flag checked against the command and parsed into its value; what was given recorded.
absl::Status ApplyFlags(const CommandInfo& command, const std::vector<FlagItem>& items,
                        ParsedArgs& parsed) {
  for (const FlagItem& item : items) {
    if (std::find(command.flags.begin(), command.flags.end(), item.name) ==
        command.flags.end()) {
      std::vector<std::string> users;
      for (const CommandInfo& c : Commands()) {
        if (std::find(c.flags.begin(), c.flags.end(), item.name) != c.flags.end()) {
          users.push_back(c.name);
        }
      }
      return UsageError(Dashed(item.name),
                        absl::StrCat("does not apply to ", command.name, " (it is for ",
                                     absl::StrJoin(users, ", "), ")"));
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(item.name);
    std::string value = item.negated ? "false" : (item.has_value ? item.value : "true");
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return UsageError(Dashed(item.name),
                        absl::StrCat("\"", value, "\" is not a valid value: ", error));
    }
    parsed.given.insert(item.name);
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// What the first pass over argv found: the flags to apply once the command is known, and the
// names that are no flag of any command.
struct FirstPass {
  std::vector<FlagItem> items;
  std::vector<std::string> unknown;
};

// The flag at argv[i] ("--name", "--name=value", "--noflag"), its value taken from argv[i + 1]
// when it needs one and has none (then `i` moves past it).
absl::Status ReadFlag(const std::vector<std::string>& argv, size_t& i,
                      const std::set<std::string>& known, FirstPass& pass) {
  const std::string& a = argv[i];
  if (a.rfind("--", 0) != 0) {
    return UsageError(a, "unknown option (flags are written --name=value or --name value)");
  }
  FlagItem item;
  const size_t eq = a.find('=');
  item.name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
  std::replace(item.name.begin(), item.name.end(), '-', '_');
  if (eq != std::string::npos) {
    item.value = a.substr(eq + 1);
    item.has_value = true;
  }
  absl::CommandLineFlag* flag = FindFlag(item);
  if (flag == nullptr || known.count(item.name) == 0) {
    pass.unknown.push_back(item.name);  // judged once the command is known
    return absl::OkStatus();
  }
  if (!item.has_value && !item.negated && !flag->IsOfType<bool>()) {
    if (i + 1 >= argv.size()) return UsageError(Dashed(item.name), "needs a value");
    item.value = argv[++i];
    item.has_value = true;
  }
  pass.items.push_back(std::move(item));
  return absl::OkStatus();
}

// The command and its positional words, --help and --version, and the flags (not yet applied).
absl::Status ReadArgs(const std::vector<std::string>& argv, const std::set<std::string>& known,
                      ParsedArgs& parsed, FirstPass& pass) {
  bool flags_done = false;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (flags_done || a.size() < 2 || a[0] != '-' || a == "-") {
      if (parsed.command.empty() && !flags_done) {
        parsed.command = a;
      } else {
        parsed.positional.push_back(a);
      }
    } else if (a == "--") {
      flags_done = true;
    } else if (a == "-h" || a == "--help" || a == "--helpfull" || a == "--helpshort") {
      parsed.help = true;
    } else if (a == "--version") {
      parsed.version = true;
    } else if (absl::Status st = ReadFlag(argv, i, known, pass); !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& argv) {
  ParsedArgs parsed;
  // First pass: the command is the first word that is not a flag or a flag's value. Flags are
  // checked against it, so find it before judging any flag.
  FirstPass pass;
  const std::set<std::string> known = AllFlagNames();
  if (absl::Status st = ReadArgs(argv, known, parsed, pass); !st.ok()) return st;
  const CommandInfo* command = FindCommand(parsed.command);
  if (!pass.unknown.empty()) {
    const std::string nearest = Nearest(pass.unknown[0], command, known);
    return UsageError(Dashed(pass.unknown[0]),
                      absl::StrCat("unknown flag",
                                   nearest.empty() ? "" : "; did you mean " + Dashed(nearest) + "?",
                                   " (wavecrest COMMAND --help lists a command's flags)"));
  }
  if (parsed.command.empty()) return parsed;  // --help / --version alone, or nothing
  if (command == nullptr) {
    std::vector<std::string> names;
    for (const CommandInfo& c : Commands()) names.push_back(c.name);
    return UsageError("COMMAND", absl::StrCat("unknown command \"", parsed.command,
                                              "\"; the commands: ", absl::StrJoin(names, ", ")));
  }
  if (parsed.help) return parsed;
  if (absl::Status st = ApplyFlags(*command, pass.items, parsed); !st.ok()) return st;
  return parsed;
}

std::string GlobalHelp() {
  std::string s =
      "wavecrest: hardware-efficient transformer shapes.\n\n"
      "usage: wavecrest COMMAND [flags]        wavecrest COMMAND --help: that command's flags\n"
      "       wavecrest --version\n\ncommands:\n";
  for (const CommandInfo& c : Commands()) {
    absl::StrAppend(&s, "  ", c.name, "\n      ", c.summary, "\n");
  }
  absl::StrAppend(
      &s,
      "\nexit codes: 0 success; 2 bad command line (unknown flag, a flag the command does not "
      "take,\na bad or missing value); 10 + the gRPC status code when a call (or the offline "
      "analysis) fails,\ne.g. 13 INVALID_ARGUMENT, 15 NOT_FOUND, 19 FAILED_PRECONDITION, 24 "
      "UNAVAILABLE.\nFlags may be spelled with '-' or '_' (--micro-batch, --micro_batch). "
      "$WAVECREST_TOKEN stands for --token.\n");
  return s;
}

std::string CommandHelp(const CommandInfo& command) {
  std::string s = absl::StrCat("usage: ", command.usage, "\n\n", command.summary, "\n\nflags:\n");
  std::vector<std::string> flags = command.flags;
  std::sort(flags.begin(), flags.end());
  for (const std::string& name : flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    const std::string def = flag->DefaultValue();
    absl::StrAppend(&s, "  ", Dashed(name), def.empty() ? "" : absl::StrCat(" (default ", def, ")"),
                    "\n      ", flag->Help(), "\n");
  }
  return s;
}

std::string VersionLine() {
  std::string s = absl::StrCat("wavecrest ", WAVECREST_VERSION_STRING, " (commit ",
                               WAVECREST_GIT_COMMIT, ", ", WAVECREST_BUILD_TYPE, " build");
  const std::string cuda = WAVECREST_CUDA_VERSION;
  absl::StrAppend(&s, cuda.empty() ? ", without CUDA" : ", CUDA " + cuda + " (cuBLASLt)", ")");
  return s;
}

}  // namespace wavecrest
