#include "server/memory_release.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstddef>

namespace wavecrest {
namespace {

// gperftools' C interface (gperftools/malloc_extension_c.h), present when tcmalloc is loaded.
using GetProperty = int (*)(const char*, size_t*);
using Release = void (*)();

GetProperty TcmallocGetProperty() {
  static const auto f =
      reinterpret_cast<GetProperty>(dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty"));
  return f;
}

Release TcmallocRelease() {
  static const auto f =
      reinterpret_cast<Release>(dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory"));
  return f;
}

}  // namespace

int64_t AllocatorFreeBytes() {
  if (GetProperty get = TcmallocGetProperty()) {
    size_t page_heap = 0, central = 0, transfer = 0, thread = 0;
    get("tcmalloc.pageheap_free_bytes", &page_heap);
    get("tcmalloc.central_cache_free_bytes", &central);
    get("tcmalloc.transfer_cache_free_bytes", &transfer);
    get("tcmalloc.thread_cache_free_bytes", &thread);
    return static_cast<int64_t>(page_heap + central + transfer + thread);
  }
  const struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.fordblks);
}

void ReleaseAllocatorMemory() {
  if (Release release = TcmallocRelease()) {
    release();
  } else {
    malloc_trim(0);
  }
}

MemoryReleaser::MemoryReleaser(absl::Duration period, int64_t threshold_bytes) {
  thread_ = std::thread([this, period, threshold_bytes] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, absl::ToChronoMilliseconds(period), [this] { return stop_; })) {
      lock.unlock();
      if (AllocatorFreeBytes() > threshold_bytes) ReleaseAllocatorMemory();
      lock.lock();
    }
  });
}

MemoryReleaser::~MemoryReleaser() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace wavecrest
