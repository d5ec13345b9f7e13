// What an answer takes for granted of the work it prices (wavecrest.v1.Assumed): the workload,
// the batch, the sequence, the KV-cache length, the tensor-parallel degree of the kernels, the
// dtype and the attention kernel, with one line in words that the CLI, the Python client and the
// dashboard all print.
#ifndef WAVECREST_SERVICE_ASSUMED_H_
#define WAVECREST_SERVICE_ASSUMED_H_

#include <string>

#include "core/model_spec.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

// "training: micro-batch 1 of 2048-token sequences; TP 1, bf16, flash attention";
// "decode: batch 8, 4096 tokens of KV cache per sequence, one new token each per step; TP 1,
// bf16, flash attention". `spec` has its defaults filled (WithDefaults or NormalizeSpec).
std::string AssumedSummary(const ModelSpec& spec);

// The same as a message, with the summary.
v1::Assumed AssumedOf(const ModelSpec& spec);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_ASSUMED_H_
