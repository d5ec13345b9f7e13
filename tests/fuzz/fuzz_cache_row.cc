// libFuzzer target: what the server reads back from disk: a measurement store row (a serialized
// GemmTiming) turned into a measurement row and through the measurement CSV round trip, a
// measurement CSV, and a calibration file.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/calibration.h"
#include "service/convert.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  wavecrest::v1::GemmTiming t;
  if (t.ParseFromString(bytes)) {
    const absl::StatusOr<wavecrest::DType> dtype = wavecrest::FromProto(t.dtype());
    const absl::StatusOr<wavecrest::Layout> layout = wavecrest::FromProto(t.layout());
    if (dtype.ok() && layout.ok() && t.time_s() > 0 && t.shape().m() > 0 && t.shape().n() > 0 &&
        t.shape().k() > 0) {
      wavecrest::Measurement m;
      m.source = "fuzz";
      m.gpu = "h100-sxm";
      m.key = {
          {t.shape().m(), t.shape().n(), t.shape().k(), std::max<int64_t>(1, t.shape().batch())},
          *layout,
          *dtype};
      m.median_s = t.time_s();
      (void)wavecrest::ParseMeasurementsCsv(wavecrest::FormatMeasurementsCsv({m}), "roundtrip");
    }
  }
  (void)wavecrest::ParseMeasurementsCsv(bytes, "fuzz.csv");
  (void)wavecrest::ParseCalibration(bytes);
  return 0;
}
