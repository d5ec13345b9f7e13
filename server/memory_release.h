// Hands the heap's free memory back to the operating system after a burst.
//
// Allocators keep what a burst of requests freed for later: after 128 concurrent 4 MiB requests
// the server still held its 4 GiB peak a minute later, and a second burst took it past a 4 GiB
// container limit. A background thread asks the allocator every `period` how much free memory it
// holds, and releases it when that is more than `threshold`: tcmalloc's
// MallocExtension_ReleaseFreeMemory when the server runs on tcmalloc (looked up at run time, so
// the library need not link it), glibc's malloc_trim otherwise.
#ifndef WAVECREST_SERVER_MEMORY_RELEASE_H_
#define WAVECREST_SERVER_MEMORY_RELEASE_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "absl/time/time.h"

namespace wavecrest {

// Free bytes the allocator holds (not in use, not returned to the OS).
int64_t AllocatorFreeBytes();
// Returns them to the OS.
void ReleaseAllocatorMemory();

class MemoryReleaser {
 public:
  MemoryReleaser(absl::Duration period, int64_t threshold_bytes);
  ~MemoryReleaser();  // stops the thread
  MemoryReleaser(const MemoryReleaser&) = delete;
  MemoryReleaser& operator=(const MemoryReleaser&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_MEMORY_RELEASE_H_
