// StageBuilder's ZeRO-3 collectives (stage_builder.hpp): each layer's parameter gathers before its forward and
// its backward (the backward's a layer ahead where the framework prefetches), and ZeRO++'s quantised forms of
// them and of the gradients' reduce-scatter (training.zero_pp).
#include <algorithm>
#include <utility>
#include <vector>

#include "workloads/stage_builder.hpp"

namespace dtsim::workloads::detail {
namespace {

constexpr double kQwzBlock = 8000;   // weights per int8 block with its fp32 scale (qwZ)

}  // namespace

// The backward's gathers for `layer`: issued a layer ahead (with the previous layer's, before its reduce-scatters)
// where the framework prefetches ahead and the memory holds it; and, so, those of the next layer (`more`) now.
Deps StageBuilder::backward_gather(int layer, int mb, Deps deps, bool more) {
  if (auto it = prefetched_.find(layer); it != prefetched_.end()) {
    deps.append(it->second.begin(), it->second.end());
    prefetched_.erase(it);
    deps = dequantized(layer, mb, Pass::Backward, std::move(deps));
  } else {
    deps = zero3_gather(layer, mb, std::move(deps), Pass::Backward);
  }
  const auto& plan = ctx_.w.plan;
  if (!more || plan.zero < 3 || plan.zero_ranks() == 1 || !ctx_.zero3_prefetch || !ctx_.t.zero3_prefetch_ahead) return deps;
  // Two layers gathered at once, as zero3_gather's prefetch: this one and the next, once the one after this
  // (the previous in the backward) has finished.
  Deps gate;
  if (!gather_window_.empty()) gate.push_back(gather_window_.back());
  prefetched_[layer - 1] = gather_modules(layer - 1, mb, std::move(gate), Pass::Backward);
  return deps;
}

Deps StageBuilder::zero3_gather(int layer, int mb, Deps deps, Pass pass) {
  if (ctx_.w.plan.zero < 3 || ctx_.w.plan.zero_ranks() == 1) return deps;
  for (const Index g : gather_modules(layer, mb, gather_gate(), pass)) deps.push_back(g);
  return dequantized(layer, mb, pass, std::move(deps));
}

// With prefetch, a gather may start once the compute two layers back has finished (two layers gathered at once);
// without, once the previous layer's compute has.
Deps StageBuilder::gather_gate() const {
  const std::size_t back = ctx_.zero3_prefetch ? 2 : 1;
  if (gather_window_.size() < back) return {};
  return {gather_window_[gather_window_.size() - back]};
}

// Where the gathers before `pass` go: hybrid FSDP's, or hpZ's backward from the secondary partition, within the
// node, the others over the data-parallel group; qwZ sends int8 with an fp32 scale per block of kQwzBlock weights
// (deepspeed/runtime/zero/partition_parameters.py, CUDAQuantizer: target_group_size 8000). None where hpZ's node
// holds one rank of the group (its secondary partition is the whole unit).
std::optional<StageBuilder::GatherRoute> StageBuilder::gather_route(Pass pass) const {
  const ZeroPp& zpp = ctx_.t.zero_pp;
  const bool secondary = zpp.hpz && pass == Pass::Backward;
  if (secondary && ctx_.node_dp <= 1) return std::nullopt;
  return GatherRoute{ctx_.w.plan.shard_ranks > 0 || secondary ? Group::Shard : Group::Dp,
                     zpp.qwz ? (1.0 + 4.0 / kQwzBlock) / bytes_per_element(ctx_.t.weight_dtype) : 1.0};
}

// ZeRO-3's gather of a unit outside the layers (kEmbeddingUnit, kLogitsUnit) before its pass, routed and gated as
// the layers' are: FSDP's units of their own (torchtitan's apply_fsdp_to_decoder: tok_embeddings, and [norm,
// lm_head], which it does not reshard after the forward, so no gather before its backward); DeepSpeed's modules,
// fetched for each pass. Under pipeline parallelism FSDP gathers them at the first micro-batch's forward only.
Deps StageBuilder::unit_gather(Bytes weights, int unit, int mb, Deps deps, Pass pass) {
  const auto& plan = ctx_.w.plan;
  if (plan.zero < 3 || plan.zero_ranks() == 1 || weights.value() <= 0) return deps;
  if (plan.fsdp != Fsdp::None &&
      ((plan.fsdp_gathers_once() && (pass != Pass::Forward || mb != 0)) || (unit == kLogitsUnit && pass != Pass::Forward)))
    return deps;
  const auto route = gather_route(pass);
  if (!route) return deps;
  deps.push_back(collective(CollectiveKind::AllGather, route->group, weights * route->wire, CommPurpose::ZeroParamGather,
                            -1, mb, gather_gate()));
  return deps;
}

// One gather per module, as DeepSpeed's ZeRO-3 fetches parameters per sub-module (each pays the ring's per-step
// latency over the whole data-parallel group), or FSDP's layer at once; the routed experts' over their own group.
Deps StageBuilder::gather_modules(int layer, int mb, Deps gate, Pass pass) {
  Deps out;
  const auto route = gather_route(pass);
  if (!route) return out;
  const LayerWork& work = ctx_.work(layer);
  for (const Bytes part : work.gathered)
    out.push_back(collective(CollectiveKind::AllGather, route->group, part * route->wire, CommPurpose::ZeroParamGather,
                             layer, mb, gate));
  if (work.expert_gathered.value() > 0 && ctx_.w.plan.expert_dp() > 1)
    out.push_back(collective(CollectiveKind::AllGather, Group::ExpertDp, work.expert_gathered,
                             CommPurpose::ZeroParamGather, layer, mb, gate));
  return out;
}

// qwZ: the gathered int8 modules dequantised on the compute stream before the layer uses them (DeepSpeed waits on
// the gather's handle and dequantises there), with this rank's own shard quantised before its gather: read 1 and
// write w bytes per gathered weight, read w and write 1 per owned one.
Deps StageBuilder::dequantized(int layer, int mb, Pass pass, Deps deps) {
  const std::vector<Bytes>& modules = ctx_.work(layer).gathered;
  if (!ctx_.t.zero_pp.qwz || modules.empty() || deps.empty()) return deps;
  if (ctx_.t.zero_pp.hpz && pass == Pass::Backward && ctx_.node_dp <= 1) return deps;
  const double we = bytes_per_element(ctx_.t.weight_dtype);
  double weights = 0;
  for (const Bytes part : modules) weights += part.value() / we;
  Kernel k;
  k.kind = KernelClass::Quantize;
  k.pass = pass;
  k.bytes = Bytes(weights * (1.0 + we) * (1.0 + 1.0 / ctx_.w.plan.zero_ranks()));
  return compute({k}, Scope::Layer, pass, layer, mb, std::move(deps));
}

// qgZ (DeepSpeed's all_to_all_quant_reduce, deepspeed/runtime/comm/coalesced_collectives.py): a bucket's
// gradients quantised to int4, exchanged among the node's data-parallel ranks (all-to-all), each rank's slice
// reduced and quantised again, exchanged with the ranks at its place on the other nodes (all-to-all), and
// dequantised and reduced into this rank's shard. The three kernels run on DeepSpeed's reduction stream, beside
// the backward; dtsim charges them to the GPU before the first exchange, so that the two exchanges follow each
// other. Their bytes: quantise, read g and write 0.5 per gradient; reduce and quantise again, read 0.5 per gradient
// and write 0.5 per gradient of the node's slice; dequantise and reduce, read 0.5 per gradient of that slice and
// write g per gradient of this rank's shard.
Index StageBuilder::quantized_reduce(Bytes bytes, int layer, int mb, Deps deps) {
  const double g = bytes_per_element(ctx_.t.grad_dtype);
  const double grads = bytes.value() / g;
  const double node = std::max(1, ctx_.node_dp);
  const double dp = ctx_.w.plan.dp_ranks();
  Kernel k;
  k.kind = KernelClass::Quantize;
  k.pass = Pass::Backward;
  k.bytes = Bytes(grads * (g + 0.5 + 0.5) + grads / node * (0.5 + 0.5) + grads / dp * g);
  const Deps quantized = compute({k}, Scope::Layer, Pass::Backward, layer, mb, std::move(deps));
  Deps last = quantized;
  if (node > 1)
    last = {collective(CollectiveKind::AllToAll, Group::Shard, Bytes(grads * 0.5), CommPurpose::DataParallelGrads,
                       layer, mb, last)};
  if (dp > node)
    last = {collective(CollectiveKind::AllToAll, Group::Replica, Bytes(grads / node * 0.5),
                       CommPurpose::DataParallelGrads, layer, mb, last)};
  return last.front();
}

}  // namespace dtsim::workloads::detail
