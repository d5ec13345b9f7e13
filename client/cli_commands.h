// Inside the CLI (client/cli.cc dispatches): each command family's entry point, in its own file,
// and what they share (cli_common.cc): the client for --server, failures as exit codes, the
// flags several commands parse, a progress bar, and reading and writing files.
#ifndef WAVECREST_CLIENT_CLI_COMMANDS_H_
#define WAVECREST_CLIENT_CLI_COMMANDS_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/advisor_client.h"
#include "client/cli.h"
#include "core/calibration.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {
namespace cli {

// The client for --server, with the command's deadline, TLS and token.
AdvisorClient ClientFor(const CliOptions& o);

// Prints the error and returns the exit code: 2 when every violation names a --flag (a usage
// error), else ExitCodeFor.
int Fail(std::ostream& err, const absl::Status& status);

// OK with --server; else a violation of --server saying the command needs one.
absl::Status NeedServer(const CliOptions& o);

// "8192x12288x4096" or "2048x2048x128x64" (batch last), several separated by commas.
absl::StatusOr<std::vector<v1::GemmShape>> ParseGemms(absl::string_view text);

// --mode: empty or auto, measured, predicted.
absl::StatusOr<v1::Mode> ParseMode(absl::string_view m);

// A one-line progress bar on stderr, only when stderr is a terminal.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  void Update(const v1::Progress& p);
  void Clear();

 private:
  bool enabled_;
  bool shown_ = false;
};

// The names in a comma-separated list of files.
std::vector<std::string> Files(const std::string& list);
// Rows of every file in a comma-separated list; `labels` gets one line per file.
absl::StatusOr<std::vector<Measurement>> ReadAll(const std::string& list,
                                                 std::vector<std::string>* labels);
// Writes `text` to `path` (PERMISSION_DENIED naming the path when it cannot).
absl::Status WriteFile(const std::string& path, const std::string& text);

// The commands, each returning the process exit code (cli_<family>.cc).
int DoAnalyze(const CliOptions& o, std::ostream& out, std::ostream& err);
int DoRecommend(const CliOptions& o, std::ostream& out, std::ostream& err);
int DoSweep(const CliOptions& o, std::ostream& out, std::ostream& err);
int DoTime(const CliOptions& o, std::ostream& out, std::ostream& err);
int DoCalibrate(const CliOptions& o, std::ostream& out, std::ostream& err);
int DoDevices(const CliOptions& o, std::ostream& out, std::ostream& err);
int DoHealth(const CliOptions& o, std::ostream& out, std::ostream& err);
int DoExportMeasurements(const CliOptions& o, std::ostream& out, std::ostream& err);
int DoRecalibrate(const CliOptions& o, std::ostream& out, std::ostream& err);

}  // namespace cli
}  // namespace wavecrest

#endif  // WAVECREST_CLIENT_CLI_COMMANDS_H_
