#include "server/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace wavecrest {
namespace {

prometheus::MetricFamily Family(const std::string& name, const std::string& help,
                                prometheus::MetricType type, double value) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(m);
  return f;
}

double OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  double n = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;  // the directory stream's own descriptor
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessMetrics::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  // /proc/self/stat: fields 14 utime, 15 stime (ticks), 22 starttime (ticks after boot),
  // 23 vsize (bytes), 24 rss (pages). The command (field 2) may hold spaces: skip past ')'.
  std::ifstream stat_file("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return out;
  std::istringstream rest(text.substr(paren + 2));
  std::vector<std::string> f;  // f[0] is field 3
  for (std::string w; rest >> w;) f.push_back(w);
  if (f.size() < 22) return out;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double cpu = (std::stod(f[11]) + std::stod(f[12])) / tick;
  const double vsize = std::stod(f[20]);
  const double rss = std::stod(f[21]) * page;
  double boot_time = 0;
  std::ifstream stat_all("/proc/stat");
  for (std::string line; std::getline(stat_all, line);) {
    if (line.rfind("btime ", 0) == 0) boot_time = std::stod(line.substr(6));
  }
  const double start = boot_time + std::stod(f[19]) / tick;
  using prometheus::MetricType;
  out.push_back(Family("process_cpu_seconds_total",
                       "Total user and system CPU time spent in seconds.", MetricType::Counter,
                       cpu));
  out.push_back(Family("process_resident_memory_bytes", "Resident memory size in bytes.",
                       MetricType::Gauge, rss));
  out.push_back(Family("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                       MetricType::Gauge, vsize));
  out.push_back(Family("process_start_time_seconds",
                       "Start time of the process since unix epoch in seconds.", MetricType::Gauge,
                       start));
  out.push_back(
      Family("process_open_fds", "Number of open file descriptors.", MetricType::Gauge, OpenFds()));
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    out.push_back(Family("process_max_fds", "Maximum number of open file descriptors.",
                         MetricType::Gauge, static_cast<double>(limit.rlim_cur)));
  }
  return out;
}

}  // namespace wavecrest
