// Layers between their protos and the core (service/convert_layers.cc): the kind, a layer to
// time validated with its field named, and the analytic model's timing of it.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/convert.h"
#include "service/errors.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

v1::LayerShape Llama8bLayer() {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_kv_heads = 8;
  s.num_layers = 32;
  s.ffn_hidden_size = 14336;
  s.mlp = Mlp::kSwiglu;
  s.vocab_size = 128256;
  s.seq_length = 2048;
  s.micro_batch_size = 1;
  v1::LayerShape shape;
  shape.set_kind(v1::LAYER_KIND_TRANSFORMER);
  *shape.mutable_layer() = ToProto(s);
  return shape;
}

TEST(ConvertLayersTest, KindsRoundTripAndUnsetIsAnError) {
  for (LayerKind k :
       {LayerKind::kFusedAttention, LayerKind::kUnfusedAttention, LayerKind::kTransformerLayer}) {
    EXPECT_EQ(*FromProto(ToProto(k)), k);
  }
  absl::StatusOr<LayerKind> unset = FromProto(v1::LAYER_KIND_UNSPECIFIED);
  ASSERT_FALSE(unset.ok());
  EXPECT_THAT(std::string(unset.status().message()), HasSubstr("must be LAYER_KIND_FUSED_ATTENTION"));
}

TEST(ConvertLayersTest, ALayerToTimeRoundTrips) {
  absl::StatusOr<LayerKey> key = LayerKeyFromProto(Llama8bLayer(), "layers[0]");
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->kind, LayerKind::kTransformerLayer);
  const v1::LayerShape back = ToProto(*key);
  EXPECT_EQ(back.kind(), v1::LAYER_KIND_TRANSFORMER);
  EXPECT_EQ(back.layer().hidden_size(), 4096);
  EXPECT_EQ(back.routing(), "");  // balanced: not written
}

TEST(ConvertLayersTest, ViolationsNameTheFieldUnderTheLayer) {
  v1::LayerShape shape = Llama8bLayer();
  shape.set_kind(v1::LAYER_KIND_UNSPECIFIED);
  absl::StatusOr<LayerKey> key = LayerKeyFromProto(shape, "layers[2]");
  ASSERT_FALSE(key.ok());
  EXPECT_THAT(std::string(key.status().message()), StartsWith("layers[2].kind: "));
  shape = Llama8bLayer();
  shape.mutable_layer()->set_hidden_size(-1);
  key = LayerKeyFromProto(shape, "layers[2]");
  ASSERT_FALSE(key.ok());
  EXPECT_THAT(std::string(key.status().message()), HasSubstr("layers[2].layer.hidden_size"));
}

TEST(ConvertLayersTest, APredictedLayerIsItsSumOfParts) {
  absl::StatusOr<LayerKey> key = LayerKeyFromProto(Llama8bLayer(), "layer");
  ASSERT_TRUE(key.ok()) << key.status();
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  const v1::LayerTiming t = PredictedLayerTiming(gpu, *key);
  EXPECT_GT(t.predicted_sum_s(), 0);
  EXPECT_EQ(t.time_s(), t.predicted_sum_s());
  EXPECT_GT(t.flops(), 0);
  EXPECT_EQ(t.provenance().source(), v1::SOURCE_PREDICTED);
  EXPECT_LT(t.provenance().error_band_p10(), t.provenance().error_band_p90());
  EXPECT_EQ(t.key(), LayerKeyString(*key));
}

}  // namespace
}  // namespace wavecrest
