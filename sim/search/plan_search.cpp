#include "sim/search/plan_search.hpp"

#include <algorithm>
#include <cstddef>
#include <tuple>

#include "results/energy.hpp"
#include "topology/error.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::sim::search {
namespace {

using workloads::Recompute;
using workloads::Workload;


std::vector<int> divisors(int n, int most) {
  std::vector<int> out;
  for (int d = 1; d <= std::min(n, most); ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

template <class T>
std::vector<T> one_or(const std::optional<T>& fixed, std::vector<T> all) {
  if (fixed) return {*fixed};
  return all;
}

Screened play(const Workload& w, const topology::GpuSpec& gpu, const CommCosts& costs, const GraphFn& graph) {
  const auto g = graph ? graph(w) : workloads::generate_step(w, gpu);
  const auto t = play_analytic(g, costs);
  return {t.step_time, results::gpu_step_energy(g, t, gpu, topology::power_model())};
}

// A mixed cluster's batch shares are for the full count: the graph function balances the shorter batch again.
Workload with_micro_batches(Workload w, int micro_batches) {
  w.training->global_batch = micro_batches * w.plan.dp * w.training->micro_batch;
  w.plan.replica_micro_batches.clear();
  return w;
}

// How much a recomputation mode recomputes: none, then selective or per-op (a part of each layer), then full.
int recompute_rank(Recompute r) {
  switch (r) {
    case Recompute::None: return 0;
    case Recompute::Selective:
    case Recompute::Op: return 1;
    case Recompute::Full: return 2;
  }
  return 2;
}

// The recomputation a framework offers: Megatron's none, selective and full (selective since Megatron-LM 2022,
// Korthikanti et al.'s --recompute-granularity: 2021's code and DeepSpeed's 2021 checkpointing recompute whole
// layers only); torchtitan's none, per-op (where dtsim models it: per_op_recompute_misfit) and full.
std::vector<Recompute> recompute_modes(const Workload& w) {
  const auto f = w.training->framework;
  if (f == workloads::Framework::Megatron2021 || f == workloads::Framework::DeepSpeed2021)
    return {Recompute::None, Recompute::Full};
  if (w.training->framework != workloads::Framework::Torchtitan)
    return {Recompute::None, Recompute::Selective, Recompute::Full};
  if (workloads::per_op_recompute_misfit(w) != nullptr) return {Recompute::None, Recompute::Full};
  return {Recompute::None, Recompute::Op, Recompute::Full};
}

}  // namespace

SearchSpace default_space(const Workload& w, int gpus, int gpus_per_node, const Fixed& fixed) {
  SearchSpace s;
  s.gpus = gpus;
  s.layers = w.model.layers;
  s.global_batch = w.training->global_batch;
  s.cp = w.plan.cp;
  s.fsdp = w.plan.fsdp != workloads::Fsdp::None;
  if (w.training) s.framework = w.training->framework;
  std::vector<int> tp;
  for (int d : divisors(gpus_per_node, gpus_per_node))
    if (w.model.heads % d == 0 && gpus % d == 0) tp.push_back(d);
  s.tp = one_or(fixed.tp, tp);
  std::vector<int> pp;   // a stage holds a layer at least; layers need not divide evenly (stage_layers spreads them)
  for (int d : divisors(gpus, std::min(gpus, w.model.layers))) pp.push_back(d);
  s.pp = one_or(fixed.pp, pp);
  std::vector<int> chunks(kMostChunks);   // 1..8, unequal splits too (stage_layers spreads the remainder)
  for (int v = 1; v <= kMostChunks; ++v) chunks[static_cast<std::size_t>(v - 1)] = v;
  s.vpp = one_or(fixed.vpp, chunks);
  s.zero = one_or(fixed.zero, std::vector<int>{0, 1, 2, 3});
  std::vector<int> micro;
  for (int b = 1; b <= s.global_batch; b *= 2) micro.push_back(b);
  s.micro_batch = one_or(fixed.micro_batch, micro);
  s.recompute = one_or(fixed.recompute, recompute_modes(w));
  s.sequence_parallel = one_or(fixed.sequence_parallel, std::vector<bool>{false, true});
  using workloads::Axis;
  s.order = one_or(fixed.order, std::vector<std::array<Axis, 3>>{{Axis::Tp, Axis::Dp, Axis::Pp}, {Axis::Tp, Axis::Pp, Axis::Dp}});
  s.gpus_per_node = gpus_per_node;
  return s;
}

std::vector<PlanChoice> enumerate(const SearchSpace& s) {
  std::vector<PlanChoice> out;
  for (int tp : s.tp)
    for (int pp : s.pp) {
      if (s.gpus % (tp * pp * s.cp) != 0 || pp > s.layers) continue;
      const int dp = s.gpus / (tp * pp * s.cp);
      for (int vpp : s.vpp) {
        if (vpp > 1 && !workloads::framework_interleaves(s.framework, s.layers, pp, vpp, kMostChunks)) continue;
        for (int zero : s.zero) {
          // Sharding over one replica changes nothing: searched, zero > 0 needs data parallelism; fixed (a
          // scenario's distributed optimizer at dp 1, as Megatron-Core runs it), it stays.
          if ((zero > 0 && dp == 1 && s.zero.size() > 1) || (zero >= 2 && pp > 1 && !s.fsdp)) continue;
          for (int mb : s.micro_batch) {
            if (s.global_batch % (dp * mb) != 0) continue;
            if (vpp > 1 && (s.global_batch / (dp * mb)) % pp != 0) continue;
            for (Recompute r : s.recompute)
              for (bool sp : s.sequence_parallel) {
                if (sp && tp == 1) continue;
                for (std::size_t o = 0; o < s.order.size(); ++o) {
                  if (o > 0 && (pp == 1 || dp == 1 || tp >= s.gpus_per_node)) break;
                  out.push_back(PlanChoice{tp, pp, vpp, zero, mb, r, sp, s.order[o]});
                }
              }
          }
        }
      }
    }
  return out;
}

Screened screen(const Workload& w, const topology::GpuSpec& gpu, const CommCosts& costs, const GraphFn& graph) {
  const auto& t = *w.training;
  const int micro_batches = t.global_batch / (w.plan.dp * t.micro_batch);
  const int round = std::max(1, w.plan.pp);
  const int first = 2 * round, second = 3 * round;
  if (micro_batches <= second) return play(w, gpu, costs, graph);
  const Screened a = play(with_micro_batches(w, first), gpu, costs, graph);
  const Screened b = play(with_micro_batches(w, second), gpu, costs, graph);
  const double more = static_cast<double>(micro_batches - second) / (second - first);
  return {b.step + (b.step - a.step) * more, b.gpu_energy + (b.gpu_energy - a.gpu_energy) * more};
}

SearchResult search(const SearchSpace& space, const MakeFn& make, const topology::GpuSpec& gpu, const CommCosts& costs,
                    const ScoreFn& score, const GraphFn& graph) {
  SearchResult out;
  // Memory grows with the micro-batch, all else equal: once one does not fit, the larger ones of the same plan are
  // dropped unbuilt (enumerate visits them later, in increasing order).
  std::map<std::tuple<int, int, int, int, int, bool, int>, int> too_big;
  // Recomputation only adds work: once a plan fits with less of it (enumerate visits none, selective or op, full
  // in that order), the same plan recomputing more is never better and is not timed.
  std::map<std::tuple<int, int, int, int, int, bool, int>, Recompute> fits_with;
  for (const PlanChoice& choice : enumerate(space)) {
    ++out.candidates;
    const int order = 9 * static_cast<int>(choice.order[0]) + 3 * static_cast<int>(choice.order[1]) +
                      static_cast<int>(choice.order[2]);
    const auto plan_key = std::make_tuple(choice.tp, choice.pp, choice.vpp, choice.zero,
                                          static_cast<int>(choice.recompute), choice.sequence_parallel, order);
    if (const auto it = too_big.find(plan_key); it != too_big.end() && choice.micro_batch > it->second) {
      ++out.pruned[std::string(kDoesNotFit)];
      continue;
    }
    const auto batch_key = std::make_tuple(choice.tp, choice.pp, choice.vpp, choice.zero, choice.micro_batch,
                                           choice.sequence_parallel, order);
    if (const auto it = fits_with.find(batch_key);
        it != fits_with.end() && recompute_rank(it->second) < recompute_rank(choice.recompute)) {
      ++out.pruned[std::string(kRecomputesMore)];
      continue;
    }
    Made made = make(choice);
    if (!made.workload) {
      ++out.pruned[made.why_not];
      continue;
    }
    workloads::MemoryPlan memory = made.memory ? std::move(*made.memory) : workloads::plan_memory(*made.workload, gpu);
    if (!memory.fits) {
      ++out.pruned[std::string(kDoesNotFit)];
      too_big.emplace(plan_key, choice.micro_batch);
      if (!out.nearest || memory.margin > out.nearest->memory.margin)
        out.nearest = Candidate{choice, *made.workload, std::move(memory), Seconds(0), Joules(0), 0.0};
      continue;
    }
    fits_with.emplace(batch_key, choice.recompute);
    const Screened s = screen(*made.workload, gpu, costs, graph);
    const double rank = score ? score(s.step, s.gpu_energy) : s.step.value();
    out.ranked.push_back(Candidate{choice, std::move(*made.workload), std::move(memory), s.step, s.gpu_energy, rank});
  }
  std::ranges::stable_sort(out.ranked, {}, &Candidate::score);
  if (!out.ranked.empty()) out.nearest.reset();
  return out;
}

}  // namespace dtsim::sim::search
