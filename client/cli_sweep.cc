// `wavecrest sweep`: one dimension of a model (or m, n or k of one GEMM) from --from to --to,
// predicted offline or through --server, as a table or JSON, the plot written with --svg.
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli_commands.h"
#include "client/format.h"
#include "client/svg.h"
#include "core/gemm.h"
#include "core/model_spec.h"
#include "core/status_macros.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/sweep_logic.h"

namespace wavecrest {
namespace cli {
namespace {

bool IsGemmSweep(v1::SweepDimension d) {
  return d == v1::SWEEP_DIMENSION_GEMM_M || d == v1::SWEEP_DIMENSION_GEMM_N ||
         d == v1::SWEEP_DIMENSION_GEMM_K;
}

// The one GEMM an m, n or k sweep varies, with its layout and dtype when given.
absl::Status SweptGemmFromFlags(const CliOptions& o, v1::SweepRequest& request) {
  if (o.gemm.empty()) return FieldError("--gemm", "required to sweep m, n or k: MxNxK[xBATCH]");
  ASSIGN_OR_RETURN(const std::vector<v1::GemmShape> shapes, ParseGemms(o.gemm));
  if (shapes.size() != 1) return FieldError("--gemm", "give one GEMM to sweep");
  *request.mutable_gemm() = shapes[0];
  if (!o.layout.empty()) {
    absl::StatusOr<Layout> l = ParseLayout(o.layout);
    if (!l.ok()) return FieldError("--layout", l.status().message());
    request.set_layout(ToProto(*l));
  }
  if (!o.dtype.empty()) {
    absl::StatusOr<DType> d = ParseDType(o.dtype);
    if (!d.ok()) return FieldError("--dtype", d.status().message());
    request.set_dtype(ToProto(*d));
  }
  return absl::OkStatus();
}

// The Sweep request the flags ask for; the mode is PREDICTED unless --mode says otherwise.
absl::StatusOr<v1::SweepRequest> SweepRequestFromFlags(const CliOptions& o) {
  v1::SweepRequest request;
  absl::StatusOr<v1::SweepDimension> dim = ParseSweepDimension(o.vary);
  if (!dim.ok()) return FieldError("--vary", dim.status().message());
  request.set_vary(*dim);
  request.set_from(o.from);
  request.set_to(o.to);
  request.set_step(o.step);
  request.set_gpu(o.gpu);
  request.set_max_gpu_seconds(o.max_gpu_seconds);
  if (IsGemmSweep(*dim)) {
    RETURN_IF_ERROR(SweptGemmFromFlags(o, request));
  } else {
    ASSIGN_OR_RETURN(*request.mutable_model(), LoadSpecWithOverrides(o));
  }
  ASSIGN_OR_RETURN(const v1::Mode mode, o.mode.empty() ? v1::MODE_PREDICTED : ParseMode(o.mode));
  request.set_mode(mode);
  return request;
}

// The answer, offline (predicted only) or from --server's stream, its progress on `bar`.
absl::StatusOr<v1::SweepResponse> Sweep(const CliOptions& o, const v1::SweepRequest& request,
                                        ProgressBar& bar) {
  if (o.server.empty()) {
    if (request.mode() != v1::MODE_PREDICTED) {
      return FieldError("--mode", "auto and measured need --server (a GPU worker)");
    }
    CallContext ctx;
    ctx.progress = [&](const v1::Progress& p) { bar.Update(p); };
    return RunSweep(request, ctx);
  }
  v1::SweepResponse final;
  absl::Status st = ClientFor(o).Sweep(request, [&](const v1::SweepResponse& m) {
    if (m.done()) {
      final = m;
    } else {
      bar.Update(m.progress());
    }
  });
  return st.ok() ? absl::StatusOr<v1::SweepResponse>(final) : st;
}

// --svg FILE: the sweep's plot, titled by the GEMM or the model.
absl::Status WriteSweepSvg(const CliOptions& o, const v1::SweepRequest& request,
                           const v1::SweepResponse& result) {
  const std::string title =
      IsGemmSweep(request.vary())
          ? absl::StrCat("GEMM ", o.gemm, ", varying ", o.vary)
          : absl::StrCat(request.model().name().empty() ? o.model : request.model().name(),
                         ", varying ", o.vary);
  std::ofstream f(o.svg);
  f << SweepSvg(result, o.vary, title);
  if (!f.good()) return FieldError("--svg", absl::StrCat("cannot write ", o.svg));
  return absl::OkStatus();
}

}  // namespace

int DoSweep(const CliOptions& o, std::ostream& out, std::ostream& err) {
  absl::StatusOr<v1::SweepRequest> request = SweepRequestFromFlags(o);
  if (!request.ok()) return Fail(err, request.status());
  const bool json = o.format == "json";
  ProgressBar bar(!json);
  absl::StatusOr<v1::SweepResponse> result = Sweep(o, *request, bar);
  bar.Clear();
  if (!result.ok()) return Fail(err, result.status());
  result->clear_progress();
  if (!o.svg.empty()) {
    if (absl::Status st = WriteSweepSvg(o, *request, *result); !st.ok()) return Fail(err, st);
  }
  out << (json ? FormatJson(*result) + "\n" : FormatSweep(*result, o.vary));
  return 0;
}

}  // namespace cli
}  // namespace wavecrest
