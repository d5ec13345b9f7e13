// Handing free heap memory back to the OS (server/memory_release.h): the allocator's free bytes
// are counted, releasing them never adds any, and the background releaser stops at once when it
// is destroyed (it waits on a condition, not on its period).
#include "server/memory_release.h"

#include <malloc.h>

#include <cstdlib>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizedHeap = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitizedHeap = true;
#else
constexpr bool kSanitizedHeap = false;
#endif
#else
constexpr bool kSanitizedHeap = false;
#endif

TEST(MemoryReleaseTest, FreedBlocksAreCountedAsTheAllocatorsFreeBytes) {
  if (kSanitizedHeap) GTEST_SKIP() << "the sanitizer's allocator keeps no glibc arena";
  // Blocks below the mmap threshold stay in the heap when freed, and with a high trim threshold
  // free() does not hand the heap's top back either (the default is restored after).
  ASSERT_EQ(mallopt(M_TRIM_THRESHOLD, 64 << 20), 1);
  constexpr size_t kBlock = 32 << 10;
  constexpr int kBlocks = 128;
  std::vector<void*> blocks;
  for (int i = 0; i < kBlocks; ++i) blocks.push_back(std::malloc(kBlock));
  void* keep = std::malloc(kBlock);
  const int64_t before = AllocatorFreeBytes();
  for (void* b : blocks) std::free(b);
  const int64_t after = AllocatorFreeBytes();
  EXPECT_GE(after - before, static_cast<int64_t>(kBlock) * kBlocks / 2)
      << "before " << before << ", after " << after;
  ReleaseAllocatorMemory();
  EXPECT_LE(AllocatorFreeBytes(), after);
  std::free(keep);
  mallopt(M_TRIM_THRESHOLD, 128 << 10);
}

TEST(MemoryReleaseTest, TheReleaserStopsAtOnceWhateverItsPeriod) {
  // Destroyed long before its first period ends: the destructor wakes the thread, which ends;
  // a releaser that waited out its period would hold this test for an hour.
  { MemoryReleaser releaser(absl::Hours(1), int64_t{1} << 30); }
  // One that releases as often as it can runs beside allocations and stops as well.
  MemoryReleaser busy(absl::Milliseconds(1), 0);
  for (int i = 0; i < 1000; ++i) std::free(std::malloc(4096));
  SUCCEED();
}

}  // namespace
}  // namespace wavecrest
