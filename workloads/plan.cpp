#include "workloads/plan.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include "topology/error.hpp"

namespace dtsim::workloads {
namespace {

std::size_t index(Axis a) { return static_cast<std::size_t>(a); }

[[noreturn]] void fail(const std::string& key, long long value, const std::string& reason, const std::string& allowed) {
  throw InputError(key, std::to_string(value), reason, allowed);
}

void check_degrees(const ParallelPlan& p, int gpus) {
  if (p.tp * p.pp * p.dp != gpus)
    fail("parallelism.dp", p.dp, fmt::format("tp {} x pp {} x dp {} = {} GPUs, but the cluster has {}; dp", p.tp, p.pp,
                                             p.dp, p.tp * p.pp * p.dp, gpus),
         fmt::format("degrees whose product is {}", gpus));
}

void check_model_split(const ModelSpec& m, const ParallelPlan& p) {
  if (m.heads % p.tp != 0)
    fail("parallelism.tp", p.tp, fmt::format("does not divide model.heads {}: tp", m.heads), "a divisor of heads");
  if (m.kv_heads % p.tp != 0)
    fail("parallelism.tp", p.tp, fmt::format("does not divide model.kv_heads {}: tp", m.kv_heads), "a divisor of kv_heads");
  if (m.ffn_hidden % p.tp != 0)
    fail("parallelism.tp", p.tp, fmt::format("does not divide model.ffn_hidden {}: tp", m.ffn_hidden), "a divisor of ffn_hidden");
  const int stages = p.pp * p.vpp;
  if (stages > m.layers)
    fail("parallelism.pp", p.pp, fmt::format("x vpp {} = {} stages, more than model.layers {}; pp", p.vpp, stages, m.layers),
         fmt::format("pp x vpp <= {}", m.layers));
}

void check_layers_per_stage(const ModelSpec& m, const ParallelPlan& p) {
  const auto& list = p.layers_per_stage;
  if (list.empty()) return;
  const auto stages = static_cast<std::size_t>(p.pp * p.vpp);
  if (list.size() != stages)
    fail("parallelism.layers_per_stage", static_cast<long long>(list.size()), "has the wrong number of entries:",
         fmt::format("pp x vpp = {} entries", stages));
  for (int n : list)
    if (n < 1) fail("parallelism.layers_per_stage", n, "holds a stage with no layers:", "entries >= 1");
  const int sum = std::accumulate(list.begin(), list.end(), 0);
  if (sum != m.layers)
    fail("parallelism.layers_per_stage", sum, "sums to", fmt::format("a sum of model.layers = {}", m.layers));
}

void check_schedule(const ParallelPlan& p) {
  if (p.vpp == 1) return;
  if (p.schedule != Schedule::OneFOneB)
    fail("parallelism.vpp", p.vpp, "needs the 1f1b schedule (interleaved 1F1B); with gpipe vpp", "1");
  if (p.pp == 1) fail("parallelism.vpp", p.vpp, "needs pipeline parallelism (pp > 1); with pp 1 vpp", "1");
}

void check_training(const Workload& w) {
  const TrainingSpec& t = *w.training;
  const ParallelPlan& p = w.plan;
  if (t.global_batch % (p.dp * t.micro_batch) != 0)
    fail("training.micro_batch", t.micro_batch,
         fmt::format("x dp {} does not divide training.global_batch {}: micro_batch", p.dp, t.global_batch),
         "micro_batch x dp dividing global_batch");
  const int m = t.global_batch / (p.dp * t.micro_batch);
  // The step graph holds every micro-batch's ops: 100,000 a replica take 0.8 s and 211 MB for GPT 1.7B on one GPU;
  // a billion never finished.
  constexpr int kMostMicroBatches = 100'000;
  if (m > kMostMicroBatches)
    fail("training.global_batch", t.global_batch,
         fmt::format("gives {} micro-batches a data-parallel replica (dp {}, micro_batch {}), more than dtsim simulates:",
                     m, p.dp, t.micro_batch),
         fmt::format("at most {} micro-batches a replica: a smaller batch, or a larger micro_batch or dp",
                     kMostMicroBatches));
  if (p.vpp > 1 && m % p.pp != 0)
    fail("parallelism.vpp", p.vpp,
         fmt::format("(interleaved 1F1B) needs micro-batches per replica ({}) divisible by pp {}; vpp", m, p.pp),
         "1, or a batch whose micro-batch count is a multiple of pp");
  if (t.sequence_parallel && p.tp == 1)
    fail("training.sequence_parallel", 1, "needs tensor parallelism (tp > 1): sequence_parallel", "false when tp is 1");
  if (t.sequence_parallel && w.model.seq_length % p.tp != 0)
    fail("training.sequence_parallel", 1, fmt::format("needs tp {} to divide model.seq_length {}:", p.tp, w.model.seq_length),
         "false, or a tp dividing seq_length");
  if (p.zero >= 2 && p.pp > 1)
    fail("parallelism.zero", p.zero, "(gradient/parameter sharding) cannot be combined with pp > 1 (as in DeepSpeed): zero",
         "0 or 1 with pipeline parallelism");
}

}  // namespace

std::vector<int> stage_layers(const ParallelPlan& plan, int layers) {
  if (!plan.layers_per_stage.empty()) return plan.layers_per_stage;
  const int stages = plan.pp * plan.vpp;
  DTSIM_ASSERT(stages >= 1 && stages <= layers, "stage_layers on an unchecked plan");
  std::vector<int> out(static_cast<std::size_t>(stages), layers / stages);
  // The remainder goes to the stages furthest from either end (ties: the earlier stage).
  std::vector<int> by_centrality(static_cast<std::size_t>(stages));
  std::iota(by_centrality.begin(), by_centrality.end(), 0);
  const auto edge_distance = [stages](int v) { return std::min(v, stages - 1 - v); };
  std::stable_sort(by_centrality.begin(), by_centrality.end(),
                   [&](int a, int b) { return edge_distance(a) > edge_distance(b); });
  for (int i = 0; i < layers % stages; ++i) ++out[static_cast<std::size_t>(by_centrality[static_cast<std::size_t>(i)])];
  return out;
}

int micro_batches(const ParallelPlan& plan, const TrainingSpec& training) {
  return training.global_batch / (plan.dp * training.micro_batch);
}

void check_plan(const Workload& w, int gpus) {
  const ParallelPlan& p = w.plan;
  DTSIM_ASSERT(w.training.has_value() != w.inference.has_value(), "a workload is training or inference");
  DTSIM_ASSERT(p.tp >= 1 && p.pp >= 1 && p.dp >= 1 && p.vpp >= 1, "the loader range-checks degrees");
  check_degrees(p, gpus);
  check_model_split(w.model, p);
  check_layers_per_stage(w.model, p);
  check_schedule(p);
  if (w.training) check_training(w);
}

Placement::Placement(const ParallelPlan& plan) : tp_(plan.tp), dp_(plan.dp), pp_(plan.pp), order_(plan.order) {
  int stride = 1;
  for (Axis a : order_) {
    stride_[index(a)] = stride;
    stride *= size(a);
  }
}

int Placement::size(Axis a) const {
  switch (a) {
    case Axis::Tp: return tp_;
    case Axis::Dp: return dp_;
    case Axis::Pp: return pp_;
  }
  DTSIM_ASSERT(false, "axis missing from Placement::size");
}

int Placement::rank(RankCoord c) const {
  return c.tp * stride_[index(Axis::Tp)] + c.dp * stride_[index(Axis::Dp)] + c.pp * stride_[index(Axis::Pp)];
}

RankCoord Placement::coord(int r) const {
  DTSIM_ASSERT(r >= 0 && r < ranks(), "rank outside the plan");
  const auto along = [&](Axis a) { return (r / stride_[index(a)]) % size(a); };
  return {along(Axis::Tp), along(Axis::Dp), along(Axis::Pp)};
}

std::vector<int> Placement::group(int r, Axis axis) const {
  RankCoord c = coord(r);
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(size(axis)));
  for (int i = 0; i < size(axis); ++i) {
    if (axis == Axis::Tp) c.tp = i;
    if (axis == Axis::Dp) c.dp = i;
    if (axis == Axis::Pp) c.pp = i;
    out.push_back(rank(c));
  }
  return out;
}

}  // namespace dtsim::workloads
