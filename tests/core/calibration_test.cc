// The calibrated cost model against published measurements, and the calibration machinery.
#include "core/calibration.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/cost_model.h"
#include "core/gemm.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

std::string SourceFile(const std::string& rel) {
  std::ifstream in(std::string(WAVECREST_SOURCE_DIR) + "/" + rel);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<Measurement> Rows(const std::string& rel) {
  absl::StatusOr<std::vector<Measurement>> rows = ParseMeasurementsCsv(SourceFile(rel), rel);
  EXPECT_TRUE(rows.ok()) << rows.status();
  return rows.ok() ? *rows : std::vector<Measurement>{};
}

std::vector<Measurement> Select(const std::vector<Measurement>& rows, const std::string& gpu,
                                DType dtype) {
  std::vector<Measurement> out;
  for (const Measurement& m : rows) {
    if (m.gpu == gpu && m.key.dtype == dtype) out.push_back(m);
  }
  return out;
}

const GpuSpec& Gpu(const char* name) { return **FindGpu(name); }

// The aligned/misaligned pairs of a measurement file: each pair's predicted ratio from `model`
// (PredictAsMeasured), or from the measured times themselves when `model` is null.
std::vector<PairCheck> SweepPairs(const char* path, const GpuSpec* model = nullptr) {
  const std::vector<Measurement> rows = Rows(path);
  std::vector<double> times;
  for (const Measurement& m : rows) {
    times.push_back(model != nullptr ? PredictAsMeasured(*model, m) : m.median_s);
  }
  return AlignmentPairs(rows, times);
}

TEST(MeasurementCsv, ReadsXlasTableAndOurSchemaAlike) {
  const std::string xla =
      "gpu,b,m,n,k,dtype,flops_per_s\n"
      "sm_90,2,256,512,1024,bf16xbf16->bf16,100000000000000\n"
      "sm_100_B200,1,256,256,256,f8e4m3fnxf8e5m2->bf16,5531558193208\n";
  absl::StatusOr<std::vector<Measurement>> rows = ParseMeasurementsCsv(xla, "x.csv");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  const Measurement& a = (*rows)[0];
  EXPECT_EQ(a.gpu, "h100-sxm");
  EXPECT_EQ(a.key.dtype, DType::kBf16);
  EXPECT_EQ(a.key.layout, Layout::kNN);
  EXPECT_EQ(a.key.shape, (GemmShape{256, 512, 1024, 2}));
  EXPECT_DOUBLE_EQ(a.median_s, 2.0 * 2 * 256 * 512 * 1024 / 1e14);
  EXPECT_EQ((*rows)[1].gpu, "b200");
  EXPECT_EQ((*rows)[1].key.dtype, DType::kFp8E4M3);
  EXPECT_EQ((*rows)[1].dtype_detail, "f8e4m3fnxf8e5m2->bf16");

  // Our schema round-trips.
  absl::StatusOr<std::vector<Measurement>> again =
      ParseMeasurementsCsv(FormatMeasurementsCsv(*rows), "again.csv");
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->size(), 2u);
  EXPECT_EQ((*again)[0].key, a.key);
  EXPECT_NEAR((*again)[0].median_s, a.median_s, 1e-5 * a.median_s);
}

TEST(MeasurementCsv, ErrorsNameTheLineAndTheField) {
  auto bad_header = ParseMeasurementsCsv("a,b,c\n1,2,3\n", "f.csv");
  EXPECT_EQ(bad_header.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_header.status().message(), HasSubstr("f.csv: header \"a,b,c\""));
  auto bad_gpu = ParseMeasurementsCsv(
      "# comment\ngpu,b,m,n,k,dtype,flops_per_s\nsm_75,1,2,3,4,bf16xbf16->bf16,5\n", "g.csv");
  EXPECT_THAT(bad_gpu.status().message(), HasSubstr("g.csv:3: gpu: unknown XLA device key"));
  auto bad_dim = ParseMeasurementsCsv(
      "gpu,b,m,n,k,dtype,flops_per_s\nsm_90,1,-2,3,4,bf16xbf16->bf16,5\n", "h.csv");
  EXPECT_THAT(bad_dim.status().message(), HasSubstr("h.csv:2: m: \"-2\" is not an integer"));
  auto bad_time = ParseMeasurementsCsv(
      std::string(kMeasurementsHeader) + "\ns,h100-sxm,bf16,,TN,1,2,3,1,0,0,m,d\n", "i.csv");
  EXPECT_THAT(bad_time.status().message(), HasSubstr("i.csv:2: median_s: \"0\""));
}

TEST(Fitter, RecoversTheParametersThatMadeTheData) {
  // Data made by the model itself with known parameters: the fit must find times that match them
  // on rows it never saw (cross-validation), whatever the starting priors.
  GpuSpec truth = PriorCatalog()[0];
  for (const GpuSpec& g : PriorCatalog()) {
    if (g.name == "h100-sxm") truth = g;
  }
  CostModelParams& p = truth.Model(DType::kBf16);
  p.peak_fraction = 0.72;
  p.k_overhead = 96;
  p.launch_s = 6e-6;
  p.epilogue_weight = 0.4;
  std::vector<Measurement> rows;
  for (int64_t m : {256, 1024, 4096}) {
    for (int64_t n : {512, 2048, 8192}) {
      for (int64_t k : {256, 1024, 4096, 16384}) {
        Measurement x;
        x.gpu = "h100-sxm";
        x.key = {{m, n, k, 1}, Layout::kNN, DType::kBf16};
        x.median_s = PredictGemmTime(truth, x.key);
        rows.push_back(x);
      }
    }
  }
  GpuSpec prior = truth;
  prior.Model(DType::kBf16) = PriorCatalog()[0].Model(DType::kBf16);
  FitOptions options;
  options.folds = 3;
  const FitResult r = FitAndValidate(prior, DType::kBf16, rows, options);
  EXPECT_EQ(r.rows, 36);
  EXPECT_GT(r.before.median_abs, 0.05);  // the priors were off
  EXPECT_LT(r.cv.median_abs, 0.02) << "cross-validated";
  EXPECT_LT(r.train.p90_abs, 0.05);
  EXPECT_FALSE(r.bands.empty());
  // Deterministic.
  const FitResult again = FitAndValidate(prior, DType::kBf16, rows, options);
  EXPECT_DOUBLE_EQ(again.cv.median_abs, r.cv.median_abs);
  EXPECT_DOUBLE_EQ(again.params.peak_fraction, r.params.peak_fraction);
}

TEST(CalibrationFile, RoundTripsAndRefusesWhatItCannotApply) {
  CalibrationFile f;
  f.model = std::string(kCostModelName);
  CalibrationEntry e;
  e.gpu = "l4";
  e.dtypes = {DType::kBf16, DType::kFp16};
  e.params = Gpu("l4").Model(DType::kBf16);
  e.params.peak_fraction = 0.61;
  e.params.launch_s = 7e-6;
  e.info.calibrated = true;
  e.info.label = "test label";
  e.info.bands = {{20e-6, -0.1, 0.2}, {std::numeric_limits<double>::infinity(), -0.05, 0.04}};
  e.info.misaligned_band = CalibrationInfo::Band{0, -0.3, 0.15};
  f.entries.push_back(e);
  absl::StatusOr<CalibrationFile> parsed = ParseCalibration(SerializeCalibration(f));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::vector<GpuSpec> catalog = GpuCatalog();
  ASSERT_TRUE(ApplyCalibration(*parsed, catalog).ok());
  const GpuSpec& l4 = *std::find_if(catalog.begin(), catalog.end(),
                                    [](const GpuSpec& g) { return g.name == "l4"; });
  EXPECT_DOUBLE_EQ(l4.Model(DType::kFp16).peak_fraction, 0.61);
  EXPECT_DOUBLE_EQ(l4.Model(DType::kFp16).launch_s, 7e-6);
  EXPECT_EQ(l4.Calibration(DType::kBf16).label, "test label");
  EXPECT_TRUE(std::isinf(l4.Calibration(DType::kBf16).bands.back().max_time_s));
  EXPECT_EQ(ErrorBand(l4, DType::kBf16, 10e-6), std::make_pair(-0.1, 0.2));
  EXPECT_EQ(ErrorBand(l4, DType::kBf16, 1.0), std::make_pair(-0.05, 0.04));
  // A misaligned GEMM takes the wider of its size class's band and the misaligned rows' band.
  EXPECT_EQ(ErrorBand(l4, DType::kBf16, 10e-6, /*aligned=*/false), std::make_pair(-0.3, 0.2));
  EXPECT_EQ(ErrorBand(l4, DType::kBf16, 1.0, /*aligned=*/false), std::make_pair(-0.3, 0.15));

  f.model = "wavecrest-analytic-v1";
  EXPECT_EQ(ApplyCalibration(f, catalog).code(), absl::StatusCode::kFailedPrecondition);
  f.model = std::string(kCostModelName);
  f.entries[0].gpu = "tpu-v5";
  EXPECT_EQ(ApplyCalibration(f, catalog).code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(ParseCalibration("{\"schema\": \"other/9\"}").ok());
  EXPECT_FALSE(ParseCalibration("not json").ok());
}

// The fused-attention constants travel in the file (the band's low end negative); a file written
// before them loads and keeps the prior's.
TEST(CalibrationFile, CarriesTheAttentionConstantsAndLoadsFilesWithoutThem) {
  CalibrationFile f;
  f.model = std::string(kCostModelName);
  CalibrationEntry e;
  e.gpu = "l4";
  e.dtypes = {DType::kBf16};
  e.params = Gpu("l4").Model(DType::kBf16);
  e.params.flash_forward_fraction = 0.5;
  e.params.flash_band_p10 = -0.3;
  e.info.label = "x";
  f.entries.push_back(e);
  const std::string text = SerializeCalibration(f);
  absl::StatusOr<CalibrationFile> parsed = ParseCalibration(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_DOUBLE_EQ(parsed->entries[0].params.flash_forward_fraction, 0.5);
  EXPECT_DOUBLE_EQ(parsed->entries[0].params.flash_band_p10, -0.3);
  // Without the attention fields: the prior's.
  nlohmann::json j = nlohmann::json::parse(text);
  for (const char* name : {"flash_forward_fraction", "flash_band_p10", "flash_block_overhead"}) {
    j["entries"][0]["params"].erase(name);
  }
  parsed = ParseCalibration(j.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_DOUBLE_EQ(parsed->entries[0].params.flash_forward_fraction,
                   CostModelParams().flash_forward_fraction);
  EXPECT_DOUBLE_EQ(parsed->entries[0].params.flash_block_overhead,
                   CostModelParams().flash_block_overhead);
  // A negative value is refused where it means nothing.
  j = nlohmann::json::parse(text);
  j["entries"][0]["params"]["flash_block_overhead"] = -1;
  EXPECT_THAT(ParseCalibration(j.dump()).status().message(), HasSubstr("flash_block_overhead"));
}

TEST(BuiltinCalibration, IsLoadedAndEveryPredictionSaysWhereItComesFrom) {
  ASSERT_TRUE(ParseCalibration(BuiltinCalibrationJson()).ok());
  for (const char* name : {"h100-sxm", "b200"}) {
    for (DType d : {DType::kBf16, DType::kFp16, DType::kTf32, DType::kFp8E4M3}) {
      const CalibrationInfo& c = Gpu(name).Calibration(d);
      EXPECT_TRUE(c.calibrated) << name << " " << DTypeName(d);
      // H100 BF16/FP16: the device sweep (cuBLASLt through PyTorch); the rest: XLA's table.
      const bool sweep = std::string(name) == "h100-sxm" && (d == DType::kBf16 || d == DType::kFp16);
      EXPECT_THAT(c.label, HasSubstr(sweep ? "fitted to torch-gemm-sweep"
                                           : "fitted to xla-default-matmul-perf-table"))
          << name << " " << DTypeName(d);
      EXPECT_THAT(c.label, HasSubstr("CV median error"));
      EXPECT_THAT(c.label, HasSubstr("alignment cliff"));
      EXPECT_FALSE(c.bands.empty());
    }
  }
  // H200: its own sweep for BF16; H100's fit (same SMs and clocks) for the dtypes it lacks.
  EXPECT_THAT(Gpu("h200").Calibration(DType::kBf16).label,
              HasSubstr("fitted to torch-gemm-sweep (h200 bf16"));
  EXPECT_THAT(Gpu("h200").Calibration(DType::kFp8E4M3).label, HasSubstr("H100's SMs"));
  // H100 FP8: XLA's rows are fitted as what the table times (PredictAsMeasured), all 675 of them,
  // none "above the peak" left out with a warning.
  EXPECT_THAT(Gpu("h100-sxm").Calibration(DType::kFp8E4M3).label, HasSubstr("675 rows"));
  EXPECT_THAT(Gpu("h100-sxm").Calibration(DType::kFp8E4M3).label,
              ::testing::Not(HasSubstr("WARNING")));
  // B200 has TMA: the cliff measured on Hopper; A100 has none: a prior, said so.
  EXPECT_THAT(Gpu("b200").Calibration(DType::kBf16).label, HasSubstr("alignment cliff carried"));
  // Where the cliff was fitted or carried, a misaligned GEMM's band is its own, and wider.
  for (const char* name : {"h100-sxm", "h200", "b200"}) {
    const GpuSpec& g = Gpu(name);
    ASSERT_TRUE(g.Calibration(DType::kBf16).misaligned_band.has_value()) << name;
    const GemmKey aligned{{8192, 50304, 768, 1}, Layout::kTN, DType::kBf16};
    const GemmKey misaligned{{8192, 50257, 768, 1}, Layout::kTN, DType::kBf16};
    const GemmPrediction a = PredictGemm(g, aligned), m = PredictGemm(g, misaligned);
    EXPECT_GE(m.band_p90 - m.band_p10, a.band_p90 - a.band_p10) << name;
  }
  EXPECT_FALSE(Gpu("a100-sxm-80gb").Calibration(DType::kBf16).misaligned_band.has_value());
  EXPECT_THAT(Gpu("a100-sxm-80gb").Calibration(DType::kBf16).label,
              HasSubstr("alignment penalty a PRIOR"));
  // A100: no data of its own: a prior, said so, with a band from the transfer experiment.
  const CalibrationInfo& a100 = Gpu("a100-sxm-80gb").Calibration(DType::kFp16);
  EXPECT_FALSE(a100.calibrated);
  EXPECT_THAT(a100.label, HasSubstr("uncalibrated prior"));
  EXPECT_THAT(a100.label, HasSubstr("mamf-ml-engineering"));
  EXPECT_FALSE(a100.bands.empty());
  // FP32 on CUDA cores has no data anywhere: the built-in prior, said so.
  EXPECT_THAT(Gpu("h100-sxm").Calibration(DType::kFp32).label, HasSubstr("uncalibrated prior"));
}

// Issue 9's acceptance numbers on the rows of XLA's table the model was fitted to (a regression
// guard; the cross-validated figures are in bench/results/calibration.txt and the held-out part of
// the table is checked outside this repository). H100 BF16 is fitted to the device sweep now (the
// next test); XLA's H100 BF16 rows run 16% faster than cuBLASLt through PyTorch on the same GPU and
// are a check in the report. H100 FP8: 71 of XLA's 675 rows ran faster than the dense peak and are
// left out; the rows below it still fit only to a p90 of 36% without passing the peak (the fit
// that met issue 9's 30% did so by predicting up to 2620 TFLOP/s).
TEST(BuiltinCalibration, FitsThePublishedTable) {
  const std::vector<Measurement> rows = Rows("data/measurements/xla-gemm-perf-table.csv");
  const ErrorStats bf16 = ErrorsOf(Ratios(Gpu("b200"), Select(rows, "b200", DType::kBf16)));
  EXPECT_EQ(bf16.rows, 225);
  EXPECT_LE(bf16.median_abs, 0.08);
  EXPECT_LE(bf16.p90_abs, 0.20);
  const ErrorStats fp8 = ErrorsOf(Ratios(Gpu("b200"), Select(rows, "b200", DType::kFp8E4M3)));
  EXPECT_EQ(fp8.rows, 675);
  EXPECT_LE(fp8.median_abs, 0.12);
  EXPECT_LE(fp8.p90_abs, 0.30);
  // H100 FP8: every row, the ones past the peak included, as the table times them
  // (PredictAsMeasured), within issue 9's FP8 bar.
  const ErrorStats h100 =
      ErrorsOf(Ratios(Gpu("h100-sxm"), Select(rows, "h100-sxm", DType::kFp8E4M3)));
  EXPECT_EQ(h100.rows, 675);
  EXPECT_LE(h100.median_abs, 0.12);
  EXPECT_LE(h100.p90_abs, 0.30);
}

// Issue 19's bars (median |error| 6% aligned, 15% misaligned; p90 15% and 35%) on the device
// sweeps' rows the model was fitted to (the cross-validated figures, within the same bars, are in
// bench/results/calibration.txt; the held-back 40% is checked outside this repository).
TEST(BuiltinCalibration, FitsTheHopperSweepsAlignedAndMisaligned) {
  for (const char* gpu : {"h100-sxm", "h200"}) {
    const std::vector<Measurement> rows =
        Rows(absl::StrCat("data/measurements/", gpu == std::string("h200") ? "h200" : "h100",
                          "-torch-gemm-sweep.csv"));
    ASSERT_EQ(rows.size(), 511u);
    std::vector<Measurement> aligned, misaligned;
    for (const Measurement& m : rows) (AlignedGemm(m.key) ? aligned : misaligned).push_back(m);
    const ErrorStats a = ErrorsOf(Ratios(Gpu(gpu), aligned));
    const ErrorStats m = ErrorsOf(Ratios(Gpu(gpu), misaligned));
    // H200's batched short-K rows jump with K in ways no neighbour explains (336, 450, 353 us at
    // K = 64, 72, 96): its aligned median sits at the bar (6.0% cross-validated), held here at
    // 6.5% so that a refit's noise does not fail the build; bench/results/calibration.txt has it.
    EXPECT_LE(a.median_abs, std::string(gpu) == "h200" ? 0.065 : 0.06) << gpu;
    EXPECT_LE(a.p90_abs, 0.15) << gpu;
    EXPECT_LE(m.median_abs, 0.15) << gpu;
    EXPECT_LE(m.p90_abs, 0.35) << gpu;
  }
  // The aligned/misaligned pairs: the model's predicted ratios within 20% of the measured ones as
  // often as the sibling GPU's measurement of the same pairs is (the floor two measurements reach;
  // the cross-validated counts are in bench/results/calibration.txt).
  const char* h100_csv = "data/measurements/h100-torch-gemm-sweep.csv";
  const char* h200_csv = "data/measurements/h200-torch-gemm-sweep.csv";
  for (const auto& [path, gpu, sibling] :
       {std::tuple(h100_csv, "h100-sxm", h200_csv), std::tuple(h200_csv, "h200", h100_csv)}) {
    const std::vector<PairCheck> measured = SweepPairs(path);
    const int floor = ReproducePairs(measured, SweepPairs(sibling)).within;
    int within = 0;
    for (const PairCheck& p : SweepPairs(path, &Gpu(gpu))) {
      within += std::abs(p.predicted_ratio / p.measured_ratio - 1) <= 0.2;
    }
    EXPECT_GE(within, floor) << gpu << ": " << within << " of " << measured.size();
    EXPECT_EQ(measured.size(), 168u);
  }
}

// A pair's family: same layout, dtype and batch, differing from it only in the dimension its pair
// differs in (within 2%), in the same kernel family. The H100 sweep's TN 8192 x n x 4096 with n at
// 4 or 8 bytes of alignment measured 2.30x-3.55x its aligned neighbour: a spread past 1.5, which
// no single predicted ratio meets within 20%.
TEST(AlignmentPairs, FamiliesGroupTheSameKernelAlongOneDimension) {
  auto pair = [](Layout layout, GemmShape mis, GemmShape al, double ratio) {
    PairCheck p;
    p.misaligned = {mis, layout, DType::kBf16};
    p.aligned = {al, layout, DType::kBf16};
    p.measured_ratio = ratio;
    return p;
  };
  const std::vector<PairCheck> pairs = {
      pair(Layout::kTN, {8192, 4082, 4096, 1}, {8192, 4080, 4096, 1}, 2.30),
      pair(Layout::kTN, {8192, 4084, 4096, 1}, {8192, 4080, 4096, 1}, 2.35),
      pair(Layout::kTN, {8192, 4092, 4096, 1}, {8192, 4088, 4096, 1}, 3.55),
      pair(Layout::kTN, {8192, 4105, 4096, 1}, {8192, 4104, 4096, 1}, 9.23),  // below 4 bytes
      pair(Layout::kTN, {8192, 4300, 4096, 1}, {8192, 4296, 4096, 1}, 2.50),  // 5% away
      pair(Layout::kTN, {4096, 4082, 4096, 1}, {4096, 4080, 4096, 1}, 2.60),  // another m
      pair(Layout::kNN, {8192, 4082, 4096, 1}, {8192, 4080, 4096, 1}, 2.70),  // another layout
      pair(Layout::kTN, {8192, 4096, 4082, 1}, {8192, 4096, 4080, 1}, 2.80),  // along k
  };
  EXPECT_THAT(PairFamilyRatios(pairs, pairs[0]), ::testing::ElementsAre(2.30, 2.35, 3.55));
  EXPECT_THAT(PairFamilyRatios(pairs, pairs[3]), ::testing::ElementsAre(9.23));
  EXPECT_THAT(PairFamilyRatios(pairs, pairs[7]), ::testing::ElementsAre(2.80));
}

// A second measurement as the prediction: pairs are matched by both shapes, and a ratio counts
// when it is within 20% of the first measurement's.
TEST(AlignmentPairs, ReproductionMatchesBothShapesAndCountsRatiosWithin20Percent) {
  auto pair = [](int64_t n_mis, int64_t n_al, double ratio) {
    PairCheck p;
    p.misaligned = {{8192, n_mis, 4096, 1}, Layout::kTN, DType::kBf16};
    p.aligned = {{8192, n_al, 4096, 1}, Layout::kTN, DType::kBf16};
    p.measured_ratio = ratio;
    return p;
  };
  const std::vector<PairCheck> first = {pair(4082, 4080, 2.30), pair(4092, 4096, 3.55),
                                        pair(4105, 4104, 9.23), pair(4111, 4112, 5.00)};
  const std::vector<PairCheck> second = {pair(4082, 4080, 2.46),   // +7%: within
                                         pair(4092, 4096, 2.80),   // -21%: outside
                                         pair(4105, 4112, 9.20),   // another aligned shape
                                         pair(4111, 4112, 6.00)};  // +20%: within
  const PairReproduction r = ReproducePairs(first, second);
  EXPECT_EQ(r.matched, 3);
  EXPECT_EQ(r.within, 2);
}

// The shared sweeps' floor: the H200 measures the same 168 pairs as the H100 (same SMs, clocks
// and cuBLASLt 13.1), and its measured ratios are not all within 20% of the H100's, which is why
// "every pair within 20%" is reported beside this floor (bench/results/calibration.txt).
TEST(AlignmentPairs, TheH200DoesNotReproduceEveryH100PairWithin20Percent) {
  const std::vector<PairCheck> h100 = SweepPairs("data/measurements/h100-torch-gemm-sweep.csv");
  const std::vector<PairCheck> h200 = SweepPairs("data/measurements/h200-torch-gemm-sweep.csv");
  ASSERT_EQ(h100.size(), 168u);
  const PairReproduction r = ReproducePairs(h100, h200);
  EXPECT_EQ(r.matched, 168);
  EXPECT_LT(r.within, r.matched);
  EXPECT_GT(r.within, r.matched * 3 / 4);  // mostly reproduced: the kernels are the same
}

// XLA's table is the median of every kernel traced: an FP8 NN dot on Hopper runs a transpose and
// the GEMM, so its figure is their mean, which can pass the dense peak; anything else, and the
// same dot on a GPU with FP8 in every layout, is the GEMM's whole time.
TEST(PredictAsMeasured, XlasFp8NnOnHopperIsTheMeanOfItsTwoKernels) {
  auto row = [](const char* gpu, Layout layout, const char* method) {
    Measurement m;
    m.gpu = gpu;
    m.key = {{4096, 4096, 4096, 1}, layout, DType::kFp8E4M3};
    m.method = method;
    return m;
  };
  const GpuSpec& h100 = Gpu("h100-sxm");
  const Measurement xla_nn = row("h100-sxm", Layout::kNN, "xla-perf-table");
  const GemmKernelTimes k = PredictGemmKernels(h100, xla_nn.key);
  ASSERT_GT(k.transpose_s, 0);
  EXPECT_FALSE(TimesWholeGemm(h100, xla_nn));
  EXPECT_DOUBLE_EQ(PredictAsMeasured(h100, xla_nn), (k.gemm_s + k.transpose_s) / 2);
  EXPECT_DOUBLE_EQ(k.gemm_s + k.transpose_s, PredictGemmTime(h100, xla_nn.key));
  for (const Measurement& whole :
       {row("h100-sxm", Layout::kTN, "xla-perf-table"), row("h100-sxm", Layout::kNN, "torch")}) {
    EXPECT_TRUE(TimesWholeGemm(h100, whole));
    EXPECT_DOUBLE_EQ(PredictAsMeasured(h100, whole), PredictGemmTime(h100, whole.key));
  }
  const GpuSpec& b200 = Gpu("b200");
  const Measurement b200_nn = row("b200", Layout::kNN, "xla-perf-table");
  EXPECT_TRUE(TimesWholeGemm(b200, b200_nn));
  EXPECT_EQ(PredictGemmKernels(b200, b200_nn.key).transpose_s, 0);
}

// Fitted that way, XLA's H100 FP8 rows no longer pass the peak the model allows: every one of them
// is predicted within 2x, the 71 "above peak" rows included.
TEST(BuiltinCalibration, XlasH100Fp8RowsAreMetAsTheMedianOfTheirKernels) {
  const GpuSpec& h100 = Gpu("h100-sxm");
  int above_peak = 0, rows = 0;
  for (const Measurement& m : Rows("data/measurements/xla-gemm-perf-table.csv")) {
    if (m.gpu != "h100-sxm" || m.key.dtype != DType::kFp8E4M3) continue;
    ++rows;
    above_peak += GemmFlops(m.key.shape) / m.median_s > h100.PeakFlops(DType::kFp8E4M3);
    const double ratio = m.median_s / PredictAsMeasured(h100, m);
    EXPECT_GT(ratio, 0.5) << GemmKeyString(m.key);
    EXPECT_LT(ratio, 2.0) << GemmKeyString(m.key);
  }
  EXPECT_EQ(rows, 675);
  EXPECT_EQ(above_peak, 71);
}

// The GPT-2 vocabulary as a logits GEMM on H100 (the example, measured by the sweep):
// 8192x50257x768 against 50304. The model's ratio of the two is within 25% of the measured one.
TEST(BuiltinCalibration, PaddingGpt2sVocabularyGainsWhatTheH100Measured) {
  const std::vector<Measurement> rows = Rows("data/measurements/h100-torch-gemm-sweep.csv");
  auto find = [&](int64_t n) {
    for (const Measurement& m : rows) {
      if (m.key.shape.m == 8192 && m.key.shape.n == n && m.key.shape.k == 768 &&
          m.key.layout == Layout::kTN) {
        return m;
      }
    }
    ADD_FAILURE() << "no row for n = " << n;
    return Measurement{};
  };
  const Measurement odd = find(50257), padded = find(50304);
  const double measured = odd.median_s / padded.median_s;
  const double predicted =
      PredictGemm(Gpu("h100-sxm"), odd.key).time_s / PredictGemm(Gpu("h100-sxm"), padded.key).time_s;
  EXPECT_GT(measured, 4.0);  // the cliff the issue reported (4.8x)
  EXPECT_NEAR(predicted / measured, 1.0, 0.25) << "measured " << measured << ", predicted " << predicted;
}

TEST(BuiltinCalibration, PredictsThePapersA100SampleLayerItNeverSaw) {
  std::vector<Measurement> layer;
  for (const Measurement& m : Rows("data/measurements/cookbook-a100.csv")) {
    if (m.source == "eleutherai-cookbook-sizing") layer.push_back(m);
  }
  ASSERT_EQ(layer.size(), 7u);
  const ErrorStats e = ErrorsOf(Ratios(Gpu("a100-sxm-80gb"), layer));
  EXPECT_LE(e.median_abs, 0.10);
  EXPECT_LE(e.max_abs, 0.30);
}

// Public H100 sweep (paper notes §4): widths that are multiples of 16 or 32 run like a multiple of
// 64; an unrounded 8h/3 width (not a multiple of 8) runs far slower.
TEST(BuiltinCalibration, SwigluWidthPatternOfThePublicH100Sweep) {
  for (DType d : {DType::kFp16, DType::kBf16}) {
    // Read as 4·4096 tokens, and as a batch of four 4096-token GEMMs.
    for (GemmShape base : {GemmShape{16384, 4096, 0, 1}, GemmShape{4096, 4096, 0, 4}}) {
      auto time = [&](int64_t k) {
        GemmShape s = base;
        s.k = k;
        return PredictGemm(Gpu("h100-sxm"), {s, Layout::kTN, d}).time_s;
      };
      const double ref = time(10944);
      EXPECT_GE(time(10922) / ref, 1.25) << DTypeName(d);
      for (int64_t k : {10848, 10880, 10912, 11008}) {
        EXPECT_NEAR(time(k) / ref, 1.0, 0.05) << k;
      }
    }
  }
}

TEST(CostModelPenalties, SayWhyAGemmIsSlow) {
  const GpuSpec& h100 = Gpu("h100-sxm");
  auto penalties = [&](GemmKey key) { return PredictGemm(h100, key).penalties; };
  EXPECT_THAT(penalties({{16384, 4096, 10922, 1}, Layout::kTN, DType::kBf16}),
              ::testing::Contains(HasSubstr("k = 10922, the leading dimension of A and B, is not a "
                                            "multiple of 8 bf16 elements (16 bytes)")));
  // The score GEMM of 64 heads with h/a = 80: on the A100 its padded K slices cost compute time;
  // on the H100 (twice the FLOP/s per byte) it is memory-bound, and the reasons say that instead
  // of the compute-side quantization that costs nothing there.
  EXPECT_THAT(PredictGemm(Gpu("a100-sxm-80gb"), {{2048, 2048, 80, 64}, Layout::kTN, DType::kBf16})
                  .penalties,
              ::testing::Contains(HasSubstr("K = 80 pads to 128")));
  const auto score = penalties({{2048, 2048, 80, 64}, Layout::kTN, DType::kBf16});
  EXPECT_THAT(score, ::testing::Contains(HasSubstr("memory-bound: it moves")));
  EXPECT_THAT(score, ::testing::Not(::testing::Contains(HasSubstr("pads to"))));
  EXPECT_THAT(penalties({{4096, 4096, 4096, 1}, Layout::kNN, DType::kFp8E4M3}),
              ::testing::Contains(HasSubstr("FP8 runs only as TN on Hopper")));
  EXPECT_THAT(penalties({{4096, 4096, 4096, 1}, Layout::kTN, DType::kFp8E4M3}),
              ::testing::Not(::testing::Contains(HasSubstr("FP8 runs only as TN"))));
  // Blackwell runs FP8 in every layout: no transposes.
  EXPECT_DOUBLE_EQ(PredictGemm(Gpu("b200"), {{4096, 4096, 4096, 1}, Layout::kNN, DType::kFp8E4M3})
                       .transpose_time_s,
                   0.0);
  // The band is the calibration's, for the prediction's size class.
  const GemmPrediction p = PredictGemm(h100, {{8192, 8192, 8192, 1}, Layout::kTN, DType::kBf16});
  EXPECT_LT(p.band_p10, 0.0);
  EXPECT_GT(p.band_p90, 0.0);
}

}  // namespace
}  // namespace wavecrest
