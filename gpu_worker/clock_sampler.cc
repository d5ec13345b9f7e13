#include "gpu_worker/clock_sampler.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"

namespace wavecrest {

// The four NVML entry points used, as NVML declares them (nvmlReturn_t is an int, 0 = success;
// nvmlDevice_t an opaque pointer; NVML_CLOCK_SM = 1).
struct ClockSampler::Api {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*by_pci)(const char*, void**) = nullptr;
  int (*clock)(void*, int, unsigned int*) = nullptr;
};

namespace {
constexpr int kNvmlClockSm = 1;
}  // namespace

std::unique_ptr<ClockSampler> ClockSampler::Open(const std::string& pci_bus_id, std::string* why,
                                                 const char* library) {
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    if (why) *why = absl::StrCat("cannot load ", library, ": ", dlerror());
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  api->init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
  api->shutdown = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlShutdown"));
  api->by_pci = reinterpret_cast<int (*)(const char*, void**)>(
      dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  api->clock =
      reinterpret_cast<int (*)(void*, int, unsigned int*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
  if (!api->init || !api->shutdown || !api->by_pci || !api->clock) {
    if (why) *why = absl::StrCat(library, " lacks the NVML entry points used");
    dlclose(lib);
    return nullptr;
  }
  if (int r = api->init(); r != 0) {
    if (why) *why = absl::StrCat("nvmlInit_v2 returned ", r);
    dlclose(lib);
    return nullptr;
  }
  void* device = nullptr;
  if (int r = api->by_pci(pci_bus_id.c_str(), &device); r != 0 || !device) {
    if (why) *why = absl::StrCat("NVML has no device at PCI bus id ", pci_bus_id, " (", r, ")");
    api->shutdown();
    dlclose(lib);
    return nullptr;
  }
  std::unique_ptr<ClockSampler> s(new ClockSampler(lib, std::move(api), device));
  int mhz = 0;
  if (!s->Read(&mhz)) {
    if (why) *why = "NVML cannot read this device's SM clock";
    return nullptr;
  }
  return s;
}

ClockSampler::ClockSampler(void* lib, std::unique_ptr<Api> api, void* device)
    : lib_(lib), api_(std::move(api)), device_(device) {}

ClockSampler::~ClockSampler() {
  Stop();
  api_->shutdown();
  dlclose(lib_);
}

bool ClockSampler::Read(int* mhz) const {
  unsigned int v = 0;
  if (api_->clock(device_, kNvmlClockSm, &v) != 0 || v == 0) return false;
  *mhz = static_cast<int>(v);
  return true;
}

void ClockSampler::Start(int period_ms) {
  Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    readings_.clear();
  }
  running_.store(true);
  thread_ = std::thread([this, period_ms] {
    while (running_.load()) {
      int mhz = 0;
      if (Read(&mhz)) {
        std::lock_guard<std::mutex> lock(mu_);
        readings_.push_back({SteadyNowNs(), mhz});
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::max(period_ms, 1)));
    }
  });
}

std::vector<ClockReading> ClockSampler::StopTimed() {
  running_.store(false);
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return readings_;
}

std::vector<int> ClockSampler::Stop() {
  std::vector<int> mhz;
  for (const ClockReading& r : StopTimed()) mhz.push_back(r.mhz);
  return mhz;
}

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<int> ClockPerSample(const std::vector<ClockReading>& readings,
                                const std::vector<int64_t>& end_ns) {
  std::vector<int> out(end_ns.size(), 0);
  if (readings.empty()) return out;
  size_t r = 0;
  for (size_t i = 0; i < end_ns.size(); ++i) {
    while (r + 1 < readings.size() && readings[r + 1].t_ns <= end_ns[i]) ++r;
    out[i] = readings[r].mhz;
  }
  return out;
}

int MedianMhz(std::vector<int> readings) {
  if (readings.empty()) return 0;
  const size_t mid = readings.size() / 2;
  std::nth_element(readings.begin(), readings.begin() + mid, readings.end());
  return readings[mid];
}

}  // namespace wavecrest
