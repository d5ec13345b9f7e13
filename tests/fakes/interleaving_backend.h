// A fake TimingBackend that works on a batch as the cuBLASLt engine does (TimeTogether): each item
// announced while it is prepared, then every item again in each of three sampling rounds, then the
// results. Each sampling window takes 6 ms on a FakeClock (it advances the clock; nothing waits)
// and heartbeats. Item `sticky` (if any) breaks the context in the second round.
#ifndef WAVECREST_TESTS_FAKES_INTERLEAVING_BACKEND_H_
#define WAVECREST_TESTS_FAKES_INTERLEAVING_BACKEND_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gpu_worker/backend.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {

class InterleavingBackend final : public TimingBackend {
 public:
  // Each sampling window advances `clock` (not owned) by kWindow.
  explicit InterleavingBackend(FakeClock* clock, int sticky = -1)
      : clock_(clock), sticky_(sticky) {}
  static constexpr absl::Duration kWindow = absl::Milliseconds(6);

  v1::DeviceFingerprint Fingerprint() const override { return {}; }
  int64_t FreeMemoryBytes() override { return 0; }
  bool Broken() const override { return broken_; }
  absl::StatusOr<v1::GemmTiming> Time(const GemmKey&, const TimingParams&) override {
    return absl::UnimplementedError("batches only");
  }
  std::vector<absl::StatusOr<v1::GemmTiming>> TimeTogether(
      const std::vector<GemmKey>& keys, const TimingParams& params, const OnItem& on_item,
      const OnDone<v1::GemmTiming>& /*on_done: all answers come back at the end*/) override {
    std::vector<absl::StatusOr<v1::GemmTiming>> out;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!on_item(i)) return Cancelled(keys.size());
    }
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i < keys.size(); ++i) {
        if (!on_item(i)) return Cancelled(keys.size());
        clock_->Advance(kWindow);
        params.heartbeat("sampling");
        if (round == 1 && static_cast<int>(i) == sticky_) broken_ = true;
      }
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      if (broken_) {
        out.push_back(static_cast<int>(i) == sticky_
                          ? absl::Status(absl::InternalError("an illegal address"))
                          : absl::Status(absl::UnavailableError("context unusable")));
        continue;
      }
      v1::GemmTiming t;
      t.set_time_s(1e-3 * static_cast<double>(i + 1));
      out.push_back(t);
    }
    return out;
  }

 private:
  static std::vector<absl::StatusOr<v1::GemmTiming>> Cancelled(size_t n) {
    return std::vector<absl::StatusOr<v1::GemmTiming>>(n, absl::CancelledError("stopped"));
  }
  FakeClock* clock_;
  int sticky_;
  bool broken_ = false;
};

}  // namespace wavecrest

#endif  // WAVECREST_TESTS_FAKES_INTERLEAVING_BACKEND_H_
