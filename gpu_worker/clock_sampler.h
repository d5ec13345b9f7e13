// The SM clock during timed work, read from NVML by a thread that samples it every few
// milliseconds while the engine's replays run (issue 10, defect 5: one probe after the samples saw
// an idle GPU). NVML is opened with dlopen, so the worker needs neither its header nor its library
// to build, and runs (with the probe kernel's reading instead) where the driver lacks it.
#ifndef WAVECREST_GPU_WORKER_CLOCK_SAMPLER_H_
#define WAVECREST_GPU_WORKER_CLOCK_SAMPLER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wavecrest {

// One reading and when it was taken (steady clock, ns: SteadyNowNs).
struct ClockReading {
  int64_t t_ns = 0;
  int mhz = 0;
};
int64_t SteadyNowNs();

// The clock each of samples ending at `end_ns` ran at: the last reading at or before its end (the
// first reading for a sample that ended before any); 0 without readings.
std::vector<int> ClockPerSample(const std::vector<ClockReading>& readings,
                                const std::vector<int64_t>& end_ns);

class ClockSampler {
 public:
  // The device with this PCI bus id ("0000:3B:00.0", as cudaDeviceGetPCIBusId writes it), through
  // `library`. nullptr, with the reason in `why`, when NVML or the device cannot be opened.
  static std::unique_ptr<ClockSampler> Open(const std::string& pci_bus_id, std::string* why,
                                            const char* library = "libnvidia-ml.so.1");
  ~ClockSampler();
  ClockSampler(const ClockSampler&) = delete;
  ClockSampler& operator=(const ClockSampler&) = delete;

  // Starts sampling every `period_ms`; Stop() ends it and returns the readings, MHz (StopTimed:
  // with when each was taken).
  void Start(int period_ms = 5);
  std::vector<int> Stop();
  std::vector<ClockReading> StopTimed();

 private:
  struct Api;
  ClockSampler(void* lib, std::unique_ptr<Api> api, void* device);
  bool Read(int* mhz) const;

  void* lib_;
  std::unique_ptr<Api> api_;
  void* device_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::mutex mu_;
  std::vector<ClockReading> readings_;
};

// The median reading (0 when there is none).
int MedianMhz(std::vector<int> readings);

}  // namespace wavecrest

#endif  // WAVECREST_GPU_WORKER_CLOCK_SAMPLER_H_
