// One decode step of a served model, as a roofline sees it: every sequence of the batch produces one token,
// reading all the weights once and its own KV cache once. The arithmetic intensity this gives (FLOP per byte of
// GPU memory traffic) is what claim S9 compares with a GPU's ridge point. Timing decode steps on a cluster
// (tensor parallelism, communication) is workloads/serving.hpp's.
#pragma once

#include "topology/units.hpp"
#include "workloads/model.hpp"
#include "workloads/training.hpp"

namespace dtsim::workloads {

struct DecodeStep {
  FlopCount flops;   // matrix FLOPs: 2 per weight of the layers and the logits, per sequence, plus attention
                     // over the cache (scores and context: 4 x layers x hidden x context per sequence)
  Bytes bytes;       // every weight once (at the inference weight precision) plus the whole KV cache
  [[nodiscard]] double intensity() const { return flops.value() / bytes.value(); }
};

DecodeStep decode_step(const ModelSpec& m, const InferenceSpec& inf);

}  // namespace dtsim::workloads
