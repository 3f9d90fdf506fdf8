#include "sim/analytic/serving_iterations.hpp"

#include <algorithm>

#include "topology/error.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/memory_plan.hpp"

namespace dtsim::sim {

using workloads::CollectiveKind;
using workloads::CommPurpose;
using workloads::Group;
using workloads::KernelClass;
using workloads::ServingPass;
using workloads::ServingPhase;

namespace {

constexpr double kActivationBytes = 2;   // 16-bit activations, as workloads/serving.cpp sends them

}  // namespace

ServingIterations::ServingIterations(const workloads::Workload& w, const topology::GpuSpec& gpu, CommCosts costs)
    : w_(w), gpu_(gpu), precision_(workloads::serving_compute_precision(*w.inference, gpu)), costs_(std::move(costs)),
      stage_layers_(workloads::stage_layers(w.plan, w.model.layers)) {
  int layer = 0;
  for (const int n : stage_layers_) {
    int moe = 0;
    for (const int end = layer + n; layer < end; ++layer) moe += w.model.moe_layer(layer) ? 1 : 0;
    stage_moe_layers_.push_back(moe);
  }
  // The ranks that play each stage, as the graph places them (replica 0's representative of each stage).
  const auto graph = workloads::generate_serving_step(w, gpu, ServingPass{});
  for (std::size_t s = 0; s < graph.classes.size(); ++s) {
    const int rank = graph.classes[s].ranks.front();
    tp_groups_.push_back(graph.group_ranks(rank, Group::Tp));
    if (workloads::attention_data_parallel(w)) ep_groups_.push_back(graph.group_ranks(rank, Group::Ep));
    if (s + 1 < graph.classes.size()) sends_.emplace_back(rank, graph.peer_rank(rank, static_cast<int>(s) + 1));
  }
}

Seconds ServingIterations::token_part(long long tokens, long long decode) {
  const std::pair key{tokens, decode};
  if (const auto it = by_tokens_.find(key); it != by_tokens_.end()) return it->second;
  const auto& m = w_.model;
  const int tp = w_.plan.tp;
  // The iteration's tokens as one decode pass and one prompt pass (their attention left out below).
  std::vector<ServingPass> all;
  if (decode > 0) all.push_back({ServingPhase::Decode, static_cast<int>(decode), 1, 1, false});
  if (tokens > decode) {
    const int prompt = static_cast<int>(tokens - decode);
    all.push_back({ServingPhase::Prefill, 1, prompt, prompt, false});
  }
  const auto layer_time = [&](bool moe) {   // one layer's kernels but attention
    Seconds t(0);
    for (const auto& k : workloads::serving_layer_kernels(m, *w_.inference, workloads::serving_sharding(w_, gpu_), all, moe))
      if (k.kind != KernelClass::FlashAttention) t += workloads::kernel_time(k, gpu_, precision_);
    return t;
  };
  const Seconds dense = layer_time(false), moe = m.moe() ? layer_time(true) : Seconds(0);
  const Bytes activation(static_cast<double>(tokens) * m.hidden * kActivationBytes);
  Seconds t = workloads::serving_host_step(*w_.inference) +
              workloads::kernel_time(workloads::serving_embedding_kernel(m, static_cast<double>(tokens)), gpu_, precision_);
  for (std::size_t s = 0; s < stage_layers_.size(); ++s) {
    Seconds all_reduce(0);
    if (tp > 1)
      all_reduce = costs_.collective(workloads::CollectiveOp{CollectiveKind::AllReduce, Group::Tp, activation,
                                                             CommPurpose::TensorParallel, 0, 0},
                                     tp_groups_[s]);
    // Under attention data parallelism each MoE layer's tokens go to their experts' GPUs and back, every other
    // replica's iteration taken to run as many tokens as this one's (serving_iterations.hpp).
    Seconds exchange(0);
    if (!ep_groups_.empty()) {
      const auto bytes = workloads::expert_exchange(w_, gpu_, static_cast<double>(tokens));
      for (const Bytes b : {bytes.dispatch, bytes.combine})
        exchange += costs_.collective(
            workloads::CollectiveOp{CollectiveKind::AllToAll, Group::Ep, b, CommPurpose::ExpertParallel, 0, 0},
            ep_groups_[s]);
    }
    t += stage_layers_[s] * 2 * all_reduce + (stage_layers_[s] - stage_moe_layers_[s]) * dense +
         stage_moe_layers_[s] * (moe + exchange);
  }
  for (std::size_t s = 0; s < sends_.size(); ++s) {
    const workloads::SendOp send{static_cast<int>(s) + 1, activation, {0, 0, workloads::Pass::Forward}};
    t += costs_.transfer(send, sends_[s].first, sends_[s].second);
  }
  return by_tokens_.emplace(key, t).first->second;
}

Seconds ServingIterations::sampling_part(long long rows) {
  if (rows == 0) return Seconds(0);
  if (const auto it = by_rows_.find(rows); it != by_rows_.end()) return it->second;
  const auto& m = w_.model;
  const ServingPass sampling{ServingPhase::Decode, static_cast<int>(rows), 1, 1, true};
  Seconds t = workloads::kernels_time(workloads::serving_logits_kernels(m, *w_.inference, w_.plan.tp, std::span(&sampling, 1)),
                                      gpu_, precision_);
  if (w_.plan.tp > 1)
    t += costs_.collective(workloads::CollectiveOp{CollectiveKind::AllGather, Group::Tp,
                                                   Bytes(static_cast<double>(rows) * m.logits_width() * kActivationBytes),
                                                   CommPurpose::TensorParallel, -1, 0},
                           tp_groups_.back());
  return by_rows_.emplace(rows, t).first->second;
}

Seconds ServingIterations::attention(const ServingPass& pass) const {
  auto kernel = workloads::serving_attention_kernel(w_.model, *w_.inference, w_.plan.tp, pass);
  kernel.launches = 0;   // one varlen launch for the batch, paid in operator()
  return w_.model.layers * workloads::kernel_time(kernel, gpu_, precision_);
}

Seconds ServingIterations::operator()(std::span<const ServingPass> passes) {
  DTSIM_ASSERT(!passes.empty(), "an iteration runs at least one pass");
  long long tokens = 0, decode = 0, rows = 0;
  Seconds t(0);
  for (const ServingPass& p : passes) {
    tokens += static_cast<long long>(p.batch) * p.new_tokens;
    if (p.phase == ServingPhase::Decode) decode += static_cast<long long>(p.batch) * p.new_tokens;
    rows += static_cast<long long>(workloads::logit_rows(p));
    t += attention(p);
  }
  // Only latent attention computes decode and prompt tokens apart: other models share one entry per token count.
  return t + w_.model.layers * workloads::compute_constants().launch_overhead +
         token_part(tokens, w_.model.mla() ? decode : 0) + sampling_part(rows);
}

Seconds kv_transfer_time(const workloads::ModelSpec& m, workloads::Precision kv_cache, double tokens,
                         std::span<const int> from, std::span<const int> to, const CommCosts& costs) {
  DTSIM_ASSERT(!from.empty() && !to.empty() && tokens >= 0, "a KV transfer between two replicas");
  const double total = tokens * workloads::kv_bytes_per_token(m, kv_cache).value();
  const double senders = static_cast<double>(from.size()), receivers = static_cast<double>(to.size());
  Seconds slowest(0);
  for (std::size_t k = 0; k < from.size(); ++k) {
    Seconds t(0);
    for (std::size_t j = 0; j < to.size(); ++j) {
      // The share of the heads both hold: [k, k+1) / senders against [j, j+1) / receivers.
      const double lo = std::max(static_cast<double>(k) / senders, static_cast<double>(j) / receivers);
      const double hi = std::min(static_cast<double>(k + 1) / senders, static_cast<double>(j + 1) / receivers);
      if (hi <= lo) continue;
      const workloads::SendOp send{0, Bytes(total * (hi - lo)), {0, 0, workloads::Pass::Forward}};
      t += costs.transfer(send, from[k], to[j]);
    }
    slowest = std::max(slowest, t);
  }
  return slowest;
}

}  // namespace dtsim::sim
