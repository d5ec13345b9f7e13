#include "server/timing_service.h"

#include <algorithm>
#include <mutex>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "core/cost_model.h"
#include "core/status_macros.h"
#include "service/advisor_logic.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/log.h"

namespace wavecrest {

namespace {
// A cached answer: a GPU measurement becomes CACHED; an emulating worker's stays PREDICTED.
template <typename Timing>
void MarkFromStore(Timing* t) {
  v1::Provenance* p = t->mutable_provenance();
  p->set_from_cache(true);
  if (p->source() == v1::SOURCE_MEASURED) p->set_source(v1::SOURCE_CACHED);
}

v1::StorageFate StorageFateOf(StoreOutcome o) {
  switch (o) {
    case StoreOutcome::kStored:
      return v1::STORAGE_FATE_STORED;
    case StoreOutcome::kSpooled:
      return v1::STORAGE_FATE_SPOOLED;
    case StoreOutcome::kLost:
      break;
  }
  return v1::STORAGE_FATE_NOT_STORED;
}
}  // namespace

// What TimingService::RunUnits needs to know of a unit of work: single GEMMs or whole layers.
struct TimingService::GemmUnit {
  using Key = GemmKey;
  using Timing = v1::GemmTiming;
  static const std::vector<Key>& Keys(const TimingTask& t) { return t.gemms; }
  static std::string Name(const Key& k) { return GemmKeyString(k); }
  static absl::string_view Noun() { return "GEMMs"; }
  static std::string Method(absl::string_view backend, const TimingTaskBase& t) {
    return TimingMethod(backend, t.autotune, t.warm_l2);
  }
  static std::optional<Timing> Lookup(MeasurementStore& c, absl::string_view kind, const Key& k,
                                      const std::string& method, const v1::DeviceFingerprint* fp) {
    return c.Lookup(kind, k, method, fp);
  }
  static StoreOutcome Store(MeasurementStore& c, absl::string_view kind, const Timing& t) {
    return c.Store(kind, t);
  }
  static absl::Status Measure(GpuWorkers& w, absl::string_view kind,
                              const std::vector<Key>& keys, const MeasureOptions& o,
                              const std::function<void(size_t, absl::StatusOr<Timing>)>& cb,
                              const std::function<bool()>& cancelled) {
    return w.Measure(kind, keys, o, cb, cancelled);
  }
  static Timing Predict(const GpuSpec& gpu, const Key& k, const absl::Status&, absl::string_view) {
    return Predicted(gpu, k);
  }
  static void Count(Metrics& m, const Key& k, const Timing& t) {
    m.GemmTimed(DTypeName(k.dtype), v1::Source_Name(t.provenance().source()).substr(7));
  }
};

struct TimingService::LayerUnit {
  using Key = LayerKey;
  using Timing = v1::LayerTiming;
  static const std::vector<Key>& Keys(const LayerTask& t) { return t.layers; }
  static std::string Name(const Key& k) { return LayerKeyString(k); }
  static absl::string_view Noun() { return "layers"; }
  static std::string Method(absl::string_view backend, const TimingTaskBase& t) {
    return LayerTimingMethod(backend, t.warm_l2);
  }
  static std::optional<Timing> Lookup(MeasurementStore& c, absl::string_view kind, const Key& k,
                                      const std::string& method, const v1::DeviceFingerprint* fp) {
    return c.LookupLayer(kind, k, method, fp);
  }
  static StoreOutcome Store(MeasurementStore& c, absl::string_view kind, const Timing& t) {
    return c.StoreLayer(kind, t);
  }
  static absl::Status Measure(GpuWorkers& w, absl::string_view kind,
                              const std::vector<Key>& keys, const MeasureOptions& o,
                              const std::function<void(size_t, absl::StatusOr<Timing>)>& cb,
                              const std::function<bool()>& cancelled) {
    return w.MeasureLayers(kind, keys, o, cb, cancelled);
  }
  // The predicted sum of parts, saying why the layer was not timed whole (the engine does not
  // build it, the worker refused it, or `otherwise`).
  static Timing Predict(const GpuSpec& gpu, const Key& k, const absl::Status& refused,
                        absl::string_view otherwise) {
    Timing t = PredictedLayerTiming(gpu, k);
    if (t.sum_of_parts_reason().empty()) {
      t.set_sum_of_parts_reason(refused.ok() ? std::string(otherwise)
                                             : std::string(refused.message()));
    }
    return t;
  }
  static void Count(Metrics&, const Key&, const Timing&) {}  // GEMMs timed counts GEMMs only
};

template <typename Timing>
void TimingService::Land(const std::string& key, Flight<Timing>& flight, const Timing* result) {
  {
    std::lock_guard<std::mutex> lock(flight.mu);
    if (flight.done) return;
    flight.done = true;
    if (result) flight.result = *result;
  }
  flight.cv.notify_all();
  std::lock_guard<std::mutex> lock(flights_mu_);
  Flights<Timing>().erase(key);
}

std::string TimingService::FlightKey(const TimingTaskBase& task, const std::string& name) {
  return absl::StrCat(task.kind, "|", task.autotune, task.warm_l2, "|", name);
}

template <>
auto TimingService::Flights<v1::GemmTiming>() -> FlightMap<v1::GemmTiming>& {
  return flights_;
}
template <>
auto TimingService::Flights<v1::LayerTiming>() -> FlightMap<v1::LayerTiming>& {
  return layer_flights_;
}

absl::StatusOr<GpuTarget> TimingService::ResolveGpu(
    absl::string_view name, absl::string_view field) const {
  if (name.empty()) {
    return FieldError(field, GpuRequired());
  }
  if (auto gpu = FindGpu(name); gpu.ok()) return GpuTarget{(*gpu)->name, *gpu};
  if (workers_) {
    if (auto kind = workers_->KindOfDevice(name)) {
      if (auto gpu = FindGpu(*kind); gpu.ok()) return GpuTarget{*kind, *gpu};
    }
  }
  return FindGpu(name).status();
}

bool TimingService::CanMeasure(absl::string_view kind) const {
  return workers_ != nullptr && workers_->CanMeasure(kind);
}

bool TimingService::MightMeasure(absl::string_view kind) const {
  return workers_ != nullptr && workers_->MightMeasure(kind);
}

absl::Status TimingService::NoWorkerError(absl::string_view kind) const {
  if (workers_ == nullptr || !workers_->MightMeasure(kind)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MODE_MEASURED: this server has no ", kind,
        " worker configured (start it with --workers or --worker_address), so waiting cannot "
        "help; ask for MODE_AUTO or MODE_PREDICTED"));
  }
  return WithRetryDelay(
      absl::UnavailableError(absl::StrCat("no worker of kind ", kind,
                                          " is up to measure on; retry later, or ask for "
                                          "MODE_AUTO or MODE_PREDICTED")),
      absl::Seconds(5), "NO_WORKER");
}

v1::GemmTiming TimingService::Predicted(const GpuSpec& gpu, const GemmKey& key) {
  const GemmPrediction p = PredictGemm(gpu, key);
  v1::GemmTiming t = TimingOf(key);
  t.set_time_s(p.time_s);
  t.set_tflops(p.tflops);
  *t.mutable_provenance() = PredictedProvenance(gpu, key.dtype, p.time_s);
  t.mutable_provenance()->set_error_band_p10(p.band_p10);  // the GEMM's own (alignment counts)
  t.mutable_provenance()->set_error_band_p90(p.band_p90);
  return t;
}

// One RunUnits call, in named steps: the cache, then a worker for the misses (identical requests
// in flight share one measurement), then the analytic model for whatever is left.
template <typename Unit, typename Task>
class TimingService::UnitRun {
 public:
  using Timing = typename Unit::Timing;
  using Key = typename Unit::Key;

  UnitRun(TimingService& service, const Task& task, const std::function<void(size_t, Timing)>& emit,
          const std::function<void(int64_t, int64_t, absl::string_view)>& progress,
          const std::function<bool()>& cancelled)
      : s_(service),
        task_(task),
        keys_(Unit::Keys(task)),
        emit_(emit),
        progress_(progress),
        cancelled_(cancelled),
        done_(keys_.size(), false),
        key_errors_(keys_.size()) {}

  absl::StatusOr<MeasureCounts> Run() {
    const bool may_measure = task_.mode != v1::MODE_PREDICTED;
    if (may_measure && s_.workers_) fp_ = s_.workers_->Fingerprint(task_.kind);
    if (fp_ && fp_->backend() == "analytic") {
      summary_.notes.push_back(
          absl::StrCat("the ", task_.kind,
                       " worker emulates the GPU with the analytic model (no GPU): its "
                       "results are PREDICTED"));
    }
    if (may_measure && s_.store_) LookUpStore();
    if (may_measure && !Missing().empty()) {
      if (s_.CanMeasure(task_.kind)) {
        RETURN_IF_ERROR(MeasureMissing());
      } else if (task_.mode == v1::MODE_MEASURED) {
        return s_.NoWorkerError(task_.kind);
      } else {
        summary_.notes.push_back(absl::StrCat("no ", task_.kind, " worker is up: uncached ",
                                              Unit::Noun(), " are PREDICTED"));
      }
    }
    NoteStored();
    RETURN_IF_ERROR(PredictTheRest());
    return summary_;
  }

 private:
  using FlightPtr = std::shared_ptr<Flight<Timing>>;

  // Hands result `i` to the caller once (from this thread or a worker-reader thread).
  void Deliver(size_t i, Timing t, absl::string_view what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_[i]) return;
    done_[i] = true;
    ++finished_;
    if (s_.metrics_) Unit::Count(*s_.metrics_, keys_[i], t);
    emit_(i, std::move(t));
    progress_(finished_, static_cast<int64_t>(keys_.size()), what);
  }
  // A worker's (or another request's) result: measured, or an emulating worker's prediction.
  void CountWorkerResult(const Timing& t, bool shared) {
    std::lock_guard<std::mutex> lock(mu_);
    ++(t.provenance().source() == v1::SOURCE_MEASURED ? summary_.measured : summary_.predicted);
    if (shared) ++summary_.shared;
  }
  // What became of a measured result handed to the store (said in the answer's notes).
  void CountStored(StoreOutcome o) {
    if (s_.metrics_) {
      s_.metrics_->StoreWrite(o == StoreOutcome::kStored    ? "stored"
                              : o == StoreOutcome::kSpooled ? "spooled"
                                                            : "lost");
    }
    std::lock_guard<std::mutex> lock(mu_);
    spooled_ += o == StoreOutcome::kSpooled;
    lost_ += o == StoreOutcome::kLost;
  }
  // The answer says when what it measured is not (yet) in the shared store.
  void NoteStored() {
    if (spooled_ > 0) {
      summary_.notes.push_back(absl::StrCat(
          spooled_, " measured ", Unit::Noun(),
          " are kept in this server's local spool, not yet in the shared store (it is "
          "unreachable); they are copied there when it is back"));
    }
    if (lost_ > 0) {
      summary_.notes.push_back(absl::StrCat(
          lost_, " measured ", Unit::Noun(),
          " could not be stored (the store failed; the server log says why): a later request "
          "measures them again"));
    }
  }
  absl::Status StopStatus() const {
    if (cancelled_()) return absl::CancelledError("the call was cancelled");
    if (s_.clock_->Now() > task_.deadline) {
      return absl::DeadlineExceededError("deadline passed");
    }
    return absl::OkStatus();
  }
  // True once the measuring budget is spent (the call itself may go on).
  bool BudgetSpent() const { return s_.clock_->Now() >= task_.measure_by; }
  std::vector<size_t> Missing() const {
    std::vector<size_t> out;
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (!done_[i]) out.push_back(i);
    }
    return out;
  }
  std::string FlightKeyOf(size_t i) const { return FlightKey(task_, Unit::Name(keys_[i])); }

  // 1. The cache. Without a fingerprint (no worker of the kind seen yet) only GPU measurements of
  // the kind are looked up.
  void LookUpStore() {
    const std::string method = Unit::Method(fp_ ? fp_->backend() : "cublaslt", task_);
    for (size_t i = 0; i < keys_.size(); ++i) {
      std::optional<Timing> hit =
          Unit::Lookup(*s_.store_, task_.kind, keys_[i], method, fp_ ? &*fp_ : nullptr);
      if (s_.metrics_) s_.metrics_->CacheLookup(hit.has_value());
      if (hit) {
        MarkFromStore(&*hit);
        ++summary_.cached;
        Deliver(i, std::move(*hit), "cache");
      }
    }
  }

  // 2. A worker, for the misses. What an identical request is measuring right now is not
  // measured again: this request waits for that result.
  absl::Status MeasureMissing() {
    ClaimFlights(Missing());
    RecheckCache();
    ClaimInStore();
    LeaveElsewhereToPrediction();
    // Every flight this request owns is finished, and its store claims released, whatever
    // happens below.
    absl::Cleanup finish_all = [&] {
      for (size_t j = 0; j < mine_.size(); ++j) {
        s_.Land<Timing>(FlightKeyOf(mine_[j]), *my_flights_[j], nullptr);
        if (s_.store_) s_.store_->Release(FlightKeyOf(mine_[j]));
      }
      for (auto& [i, flight] : elsewhere_) s_.Land<Timing>(FlightKeyOf(i), *flight, nullptr);
    };
    absl::Status st = mine_.empty() ? absl::OkStatus() : MeasureMine(mine_, my_flights_);
    if (st.ok()) st = AwaitElsewhere();
    std::move(finish_all).Invoke();
    AwaitTheirs();
    RETURN_IF_ERROR(StopStatus());
    size_t missing = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);  // a worker's reader thread may still deliver
      missing = Missing().size();
    }
    if (BudgetSpent() && missing > 0) {
      budget_spent_ = true;
      summary_.notes.push_back(absl::StrCat("the measuring budget (wall time) ran out with ",
                                            missing, " of ", keys_.size(), " ", Unit::Noun(),
                                            " not measured: they are PREDICTED"));
      return absl::OkStatus();
    }
    if (!st.ok()) {
      if (task_.mode == v1::MODE_MEASURED) return st;
      summary_.notes.push_back(
          absl::StrCat("measurement stopped (", st.message(), "); the rest is PREDICTED"));
    }
    return absl::OkStatus();
  }

  // Each missing unit is either this request's to measure (a new flight) or another's.
  void ClaimFlights(const std::vector<size_t>& missing) {
    std::lock_guard<std::mutex> lock(s_.flights_mu_);
    auto& flights = s_.Flights<Timing>();
    for (size_t i : missing) {
      const std::string fk = FlightKeyOf(i);
      if (auto it = flights.find(fk); it != flights.end()) {
        theirs_.emplace_back(i, it->second);
      } else {
        auto f = std::make_shared<Flight<Timing>>();
        flights.emplace(fk, f);
        mine_.push_back(i);
        my_flights_.push_back(f);
      }
    }
  }

  // A flight that finished between this request's cache lookup and its claim left its result in
  // the cache (stored before the flight ends): look once more before measuring.
  void RecheckCache() {
    if (!s_.store_ || !fp_ || mine_.empty()) return;
    const std::string method = Unit::Method(fp_->backend(), task_);
    std::vector<size_t> still;
    std::vector<FlightPtr> still_flights;
    for (size_t j = 0; j < mine_.size(); ++j) {
      std::optional<Timing> hit =
          Unit::Lookup(*s_.store_, task_.kind, keys_[mine_[j]], method, &*fp_);
      if (hit) {
        MarkFromStore(&*hit);
        s_.Land<Timing>(FlightKeyOf(mine_[j]), *my_flights_[j], &*hit);
        ++summary_.cached;
        Deliver(mine_[j], std::move(*hit), "cache");
      } else {
        still.push_back(mine_[j]);
        still_flights.push_back(my_flights_[j]);
      }
    }
    mine_ = std::move(still);
    my_flights_ = std::move(still_flights);
  }

  // 2b. Across processes: of the units this request owns here, those another replica of a shared
  // store is measuring wait for its result in the store (AwaitElsewhere) instead.
  void ClaimInStore() {
    if (!s_.store_ || mine_.empty()) return;
    // Short: the store renews it while this process holds it, so a replica that dies or loses
    // its database holds nothing for long.
    lease_ = kClaimLease;
    std::vector<size_t> still;
    std::vector<FlightPtr> still_flights;
    for (size_t j = 0; j < mine_.size(); ++j) {
      if (s_.store_->Claim(FlightKeyOf(mine_[j]), lease_)) {
        still.push_back(mine_[j]);
        still_flights.push_back(my_flights_[j]);
      } else {
        elsewhere_.emplace_back(mine_[j], my_flights_[j]);
      }
    }
    mine_ = std::move(still);
    my_flights_ = std::move(still_flights);
  }

  // MODE_AUTO never waits on another replica: what it is measuring now is predicted here (its
  // result is in the store for the next request). Only MODE_MEASURED waits for it.
  void LeaveElsewhereToPrediction() {
    if (task_.mode == v1::MODE_MEASURED || elsewhere_.empty()) return;
    summary_.notes.push_back(absl::StrCat(
        elsewhere_.size(), " ", Unit::Noun(),
        " are being measured by another replica now: PREDICTED here (a later request finds them "
        "in the store)"));
    for (auto& [i, flight] : elsewhere_) s_.Land<Timing>(FlightKeyOf(i), *flight, nullptr);
    elsewhere_.clear();
  }

  // The units another replica claimed: their results arrive in the store; a claim whose lease
  // ran out (the replica died or gave up) is taken over and measured here.
  absl::Status AwaitElsewhere() {
    const std::string method = Unit::Method(fp_ ? fp_->backend() : "cublaslt", task_);
    absl::Duration poll = absl::Milliseconds(50);
    while (!elsewhere_.empty()) {
      RETURN_IF_ERROR(StopStatus());
      if (BudgetSpent()) return absl::OkStatus();
      s_.clock_->SleepFor(poll);
      poll = std::min(poll * 2, absl::Milliseconds(500));
      std::vector<size_t> take;
      std::vector<FlightPtr> take_flights;
      std::vector<std::pair<size_t, FlightPtr>> waiting;
      for (auto& [i, flight] : elsewhere_) {
        if (!StopStatus().ok() || BudgetSpent()) {  // the waiter's deadline wins
          waiting.emplace_back(i, flight);
          continue;
        }
        std::optional<Timing> hit =
            Unit::Lookup(*s_.store_, task_.kind, keys_[i], method, fp_ ? &*fp_ : nullptr);
        if (hit) {
          MarkFromStore(&*hit);
          s_.Land<Timing>(FlightKeyOf(i), *flight, &*hit);
          {
            std::lock_guard<std::mutex> lock(mu_);
            ++summary_.cached;
            ++summary_.shared;
          }
          Deliver(i, std::move(*hit), "measured by another replica");
        } else if (s_.store_->Claim(FlightKeyOf(i), lease_)) {
          take.push_back(i);
          take_flights.push_back(flight);
        } else {
          waiting.emplace_back(i, flight);
        }
      }
      elsewhere_ = std::move(waiting);
      if (!take.empty()) {
        // Ours now: finished (and released) with the rest of this request's own.
        mine_.insert(mine_.end(), take.begin(), take.end());
        my_flights_.insert(my_flights_.end(), take_flights.begin(), take_flights.end());
        RETURN_IF_ERROR(MeasureMine(take, take_flights));
      }
    }
    return absl::OkStatus();
  }

  // Measures units `which` (this request's flights `flights`) on a worker; each result is stored,
  // its claim released and its flight landed.
  absl::Status MeasureMine(const std::vector<size_t>& which, const std::vector<FlightPtr>& flights) {
    std::vector<Key> keys;
    for (size_t i : which) keys.push_back(keys_[i]);
    MeasureOptions options = task_;
    options.deadline = std::min(task_.deadline, task_.measure_by);
    return Unit::Measure(
        *s_.workers_, task_.kind, keys, options,
        [&](size_t j, absl::StatusOr<Timing> r) {
          if (!r.ok()) {
            std::lock_guard<std::mutex> lock(mu_);
            key_errors_[which[j]] = r.status();
            summary_.notes.push_back(
                absl::StrCat(Unit::Name(keys[j]), ": not measured (", r.status().message(), ")"));
            return;
          }
          if (s_.store_) {
            const StoreOutcome stored = Unit::Store(*s_.store_, task_.kind, *r);
            CountStored(stored);
            // Said with the result itself: a stream cut before its notes still said it.
            r->mutable_provenance()->set_storage(StorageFateOf(stored));
            s_.store_->Release(FlightKeyOf(which[j]));
          }
          s_.Land<Timing>(FlightKeyOf(which[j]), *flights[j], &*r);
          CountWorkerResult(*r, /*shared=*/false);
          Deliver(which[j], std::move(*r), "measured");
        },
        cancelled_);
  }

  // The units another request was measuring.
  void AwaitTheirs() {
    for (auto& [i, flight] : theirs_) {
      std::unique_lock<std::mutex> lock(flight->mu);
      while (!flight->done) {
        if (!StopStatus().ok() || BudgetSpent()) break;
        flight->cv.wait_for(lock, std::chrono::milliseconds(50));
      }
      if (flight->done && flight->result) {
        Timing t = *flight->result;
        lock.unlock();
        CountWorkerResult(t, /*shared=*/true);
        Deliver(i, std::move(t), "measured (shared with an identical request)");
      }
    }
  }

  // 3. The analytic model for whatever is left (MODE_MEASURED: an error instead).
  absl::Status PredictTheRest() {
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (done_[i]) continue;
      RETURN_IF_ERROR(StopStatus());
      if (task_.mode == v1::MODE_MEASURED && !budget_spent_) {
        if (!key_errors_[i].ok()) {
          return absl::Status(key_errors_[i].code(),
                              absl::StrCat(Unit::Name(keys_[i]), ": ", key_errors_[i].message()));
        }
        return absl::UnavailableError(absl::StrCat(Unit::Name(keys_[i]), " could not be measured"));
      }
      ++summary_.predicted;
      const char* otherwise = task_.mode == v1::MODE_PREDICTED ? "predicted, as asked"
                              : budget_spent_ ? "the measuring budget ran out before it"
                                              : "no GPU worker of this kind measured it";
      Deliver(i, Unit::Predict(*task_.gpu, keys_[i], key_errors_[i], otherwise), "predicted");
    }
    return absl::OkStatus();
  }

  TimingService& s_;
  const Task& task_;
  const std::vector<Key>& keys_;
  const std::function<void(size_t, Timing)>& emit_;
  const std::function<void(int64_t, int64_t, absl::string_view)>& progress_;
  const std::function<bool()>& cancelled_;
  std::optional<v1::DeviceFingerprint> fp_;
  std::mutex mu_;  // emit, progress and the counters, when results come from a reader thread
  std::vector<bool> done_;
  bool budget_spent_ = false;  // MeasureMissing stopped at measure_by: the rest is predicted
  int64_t finished_ = 0;
  std::vector<absl::Status> key_errors_;
  MeasureCounts summary_;
  int64_t spooled_ = 0, lost_ = 0;  // measured results the store did not share
  std::vector<size_t> mine_;
  std::vector<FlightPtr> my_flights_;
  std::vector<std::pair<size_t, FlightPtr>> theirs_;
  // Owned here (in-process waiters wait on them) but claimed by another replica in the store.
  std::vector<std::pair<size_t, FlightPtr>> elsewhere_;
  absl::Duration lease_;
};

template <typename Unit, typename Task>
absl::StatusOr<MeasureCounts> TimingService::RunUnits(
    const Task& task, const std::function<void(size_t, typename Unit::Timing)>& emit,
    const std::function<void(int64_t, int64_t, absl::string_view)>& progress,
    const std::function<bool()>& cancelled) {
  return UnitRun<Unit, Task>(*this, task, emit, progress, cancelled).Run();
}

absl::StatusOr<MeasureCounts> TimingService::TimeGemms(
    const TimingTask& task, const std::function<void(size_t, v1::GemmTiming)>& emit,
    const std::function<void(int64_t, int64_t, absl::string_view)>& progress,
    const std::function<bool()>& cancelled) {
  return RunUnits<GemmUnit>(task, emit, progress, cancelled);
}

absl::StatusOr<MeasureCounts> TimingService::TimeLayers(
    const LayerTask& task, const std::function<void(size_t, v1::LayerTiming)>& emit,
    const std::function<void(int64_t, int64_t, absl::string_view)>& progress,
    const std::function<bool()>& cancelled) {
  return RunUnits<LayerUnit>(task, emit, progress, cancelled);
}

}  // namespace wavecrest
