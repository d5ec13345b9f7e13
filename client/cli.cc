// The CLI's front: the model and its override flags, the deadline, the flags every command
// shares, and one dispatch to the command families (cli_<family>.cc, client/cli_commands.h).
#include "client/cli.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cli_commands.h"
#include "core/calibration.h"
#include "core/gpu_catalog.h"
#include "core/model_spec.h"
#include "core/status_macros.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/measurer.h"
#include "service/spec_io.h"
#include "service/text.h"

namespace wavecrest {

int ExitCodeFor(const absl::Status& status) {
  return status.ok() ? 0 : 10 + static_cast<int>(status.code());
}

absl::StatusOr<v1::ModelSpec> LoadSpecWithOverrides(const CliOptions& o) {
  if (o.model.empty()) return FieldError("--model", "required: a model spec file");
  // A file that cannot be read is a command-line problem (exit 2); one that does not parse is
  // invalid input (INVALID_ARGUMENT, exit 13).
  absl::StatusOr<std::string> text = ReadFile(o.model, kMaxSpecFileBytes);
  if (!text.ok()) return FieldError("--model", text.status().message());
  absl::StatusOr<v1::ModelSpec> parsed = ParseModelJson(*text, o.model);
  if (!parsed.ok()) {
    return absl::Status(parsed.status().code(),
                        absl::StrCat(o.model, ": ", parsed.status().message()));
  }
  v1::ModelSpec spec = std::move(*parsed);
  if (o.seq != 0) spec.set_seq_length(o.seq);
  if (o.micro_batch != 0) spec.set_micro_batch_size(o.micro_batch);
  if (o.tp != 0) spec.set_tensor_parallel(o.tp);
  if (o.pp != 0) spec.set_pipeline_parallel(o.pp);
  if (o.cp != 0) spec.set_context_parallel(o.cp);
  if (o.ep != 0) spec.set_expert_parallel(o.ep);
  if (o.etp != 0) spec.set_expert_tensor_parallel(o.etp);
  if (o.capacity_factor != 0) spec.set_moe_capacity_factor(o.capacity_factor);
  if (o.routing_skew != 0) spec.set_moe_routing_skew(o.routing_skew);
  if (o.dp != 0) spec.set_data_parallel(o.dp);
  if (o.kv_cache != 0) spec.set_kv_cache_length(o.kv_cache);
  if (!o.dtype.empty()) {
    ASSIGN_OR_RETURN(DType d, ParseDType(o.dtype));
    spec.set_dtype(ToProto(d));
  }
  if (!o.attention.empty()) {
    ASSIGN_OR_RETURN(Attention a, ParseAttention(o.attention));
    spec.set_attention(ToProto(a));
  }
  if (!o.workload.empty()) {
    ASSIGN_OR_RETURN(Workload w, ParseWorkload(o.workload));
    spec.set_workload(ToProto(w));
  }
  return spec;
}

double EffectiveDeadline(const CliOptions& o) {
  if (o.deadline_s > 0) return o.deadline_s;
  const bool may_measure =
      (o.command == "recommend" || o.command == "sweep") && o.mode != "predicted";
  if (!may_measure) return kDefaultDeadlineS;
  return (o.max_gpu_seconds > 0 ? o.max_gpu_seconds : kDefaultMaxGpuSeconds) +
         kDeadlineAfterBudgetS;
}

namespace {

// --calibration FILE applied to the catalog (offline commands); 0, or the exit code.
int ApplyCalibrationFlag(const CliOptions& o, std::ostream& err) {
  if (o.calibration.empty()) return 0;
  std::ifstream file(o.calibration);
  std::stringstream text;
  text << file.rdbuf();
  absl::StatusOr<CalibrationFile> cal =
      file ? ParseCalibration(text.str())
           : absl::NotFoundError(absl::StrCat(o.calibration, ": cannot open"));
  std::vector<GpuSpec> catalog = GpuCatalog();
  absl::Status st = cal.ok() ? ApplyCalibration(*cal, catalog) : cal.status();
  if (!st.ok()) return cli::Fail(err, FieldError("--calibration", st.message()));
  PublishCatalog(std::move(catalog));
  return 0;
}

// The flags every command shares: --server, --deadline, --format; 0, or the exit code.
int CheckCommonFlags(const CliOptions& o, std::ostream& err) {
  if (absl::StrContains(o.server, "://")) {
    return cli::Fail(err, FieldError("--server", absl::StrCat("host:port, without a scheme; got \"",
                                                              o.server.substr(0, 80),
                                                              "\" (for TLS add --tls_ca)")));
  }
  if (!(o.deadline_s >= 0) || o.deadline_s > 86400 * 7) {
    return cli::Fail(err,
                     FieldError("--deadline", absl::StrCat("seconds in [0, 604800] (0: derived "
                                                           "from the measuring budget); got ",
                                                           o.deadline_s)));
  }
  if (o.format != "table" && o.format != "json") {
    err << "wavecrest: --format: must be table or json; got \"" << o.format << "\"\n";
    return 2;
  }
  return 0;
}

// Runs the command the options name; the exit code.
int RunCommand(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (const int rc = ApplyCalibrationFlag(o, err); rc != 0) return rc;
  if (const int rc = CheckCommonFlags(o, err); rc != 0) return rc;
  if (o.command == "analyze") return cli::DoAnalyze(o, out, err);
  if (o.command == "devices") return cli::DoDevices(o, out, err);
  if (o.command == "health") return cli::DoHealth(o, out, err);
  if (o.command == "time") return cli::DoTime(o, out, err);
  if (o.command == "calibrate") return cli::DoCalibrate(o, out, err);
  if (o.command == "export-measurements") return cli::DoExportMeasurements(o, out, err);
  if (o.command == "recalibrate") return cli::DoRecalibrate(o, out, err);
  if (o.command == "recommend") return cli::DoRecommend(o, out, err);
  if (o.command == "sweep") return cli::DoSweep(o, out, err);
  err << "wavecrest: unknown command \"" << o.command << "\" (try --help)\n";
  return 2;
}

}  // namespace

// Names, notes and messages come from the server or from a spec file, and either may hold escape
// sequences (a model named "\x1b]0;...\a" retitles the terminal). What a person reads passes
// through ForTerminal; JSON output stays JSON (its encoders escape every control character).
int RunCli(const CliOptions& o, std::ostream& out, std::ostream& err) {
  std::ostringstream command_out, command_err;
  const int rc = RunCommand(o, command_out, command_err);
  out << (o.format == "json" ? command_out.str() : ForTerminal(command_out.str()));
  err << ForTerminal(command_err.str());
  return rc;
}

}  // namespace wavecrest
