#include "service/assumed.h"

#include "absl/strings/str_cat.h"
#include "service/convert.h"

namespace wavecrest {

std::string AssumedSummary(const ModelSpec& spec) {
  const std::string kernels =
      absl::StrCat("; TP ", spec.tensor_parallel, ", ", DTypeName(spec.dtype), ", ",
                   AttentionName(spec.attention), " attention");
  switch (spec.workload) {
    case Workload::kDecode:
      return absl::StrCat("decode: batch ", spec.micro_batch_size, ", ", spec.kv_cache_length,
                          " tokens of KV cache per sequence, one new token each per step", kernels);
    case Workload::kPrefill:
      return absl::StrCat("prefill: batch ", spec.micro_batch_size, " of ", spec.seq_length,
                          "-token prompts", kernels);
    case Workload::kTraining:
      break;
  }
  return absl::StrCat("training: micro-batch ", spec.micro_batch_size, " of ", spec.seq_length,
                      "-token sequences", kernels);
}

v1::Assumed AssumedOf(const ModelSpec& spec) {
  v1::Assumed a;
  a.set_workload(ToProto(spec.workload));
  a.set_seq_length(spec.seq_length);
  a.set_micro_batch_size(spec.micro_batch_size);
  a.set_kv_cache_length(spec.workload == Workload::kDecode ? spec.kv_cache_length : 0);
  a.set_tensor_parallel(spec.tensor_parallel);
  a.set_dtype(ToProto(spec.dtype));
  a.set_attention(ToProto(spec.attention));
  a.set_summary(AssumedSummary(spec));
  return a;
}

}  // namespace wavecrest
