#include "results/step_graph_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <variant>

#include "sim/analytic/analytic_engine.hpp"

namespace dtsim::results {
namespace {

using workloads::CollectiveOp;
using workloads::ComputeOp;
using workloads::RankClass;

// Mean compute time of one layer pass (a layer's forward, backward or recompute for one micro-batch) on a class,
// whatever the granularity: kernels of one layer pass are summed first.
struct LayerPassTimes {
  double forward = 0, backward = 0, recompute = 0;
};

LayerPassTimes layer_pass_times(const RankClass& c) {
  std::map<workloads::Pass, std::pair<double, std::set<std::pair<int, int>>>> by_pass;
  for (const auto& op : c.ops)
    if (const auto* k = std::get_if<ComputeOp>(&op.body); k && k->scope == workloads::Scope::Layer) {
      auto& [total, passes] = by_pass[k->pass];
      total += k->duration.value();
      passes.insert({k->layer, k->micro_batch});
    }
  const auto mean = [&](workloads::Pass p) {
    auto it = by_pass.find(p);
    return it == by_pass.end() ? 0.0 : it->second.first / static_cast<double>(it->second.second.size());
  };
  return {mean(workloads::Pass::Forward), mean(workloads::Pass::Backward), mean(workloads::Pass::Recompute)};
}

nlohmann::json class_json(const RankClass& c, const sim::ClassTimeline& t) {
  int compute = 0, sends = 0, recvs = 0, host = 0;
  double host_s = 0;
  std::map<std::pair<std::string, std::string>, std::pair<int, double>> collectives;
  for (const auto& op : c.ops) {
    if (std::holds_alternative<ComputeOp>(op.body)) ++compute;
    if (const auto* h = std::get_if<workloads::HostOp>(&op.body)) {
      ++host;
      host_s += h->duration.value();
    }
    if (std::holds_alternative<workloads::SendOp>(op.body)) ++sends;
    if (std::holds_alternative<workloads::RecvOp>(op.body)) ++recvs;
    if (const auto* k = std::get_if<CollectiveOp>(&op.body)) {
      auto& [n, bytes] = collectives[{std::string(to_string(k->kind)), std::string(to_string(k->group))}];
      ++n;
      bytes += k->bytes.value();
    }
  }
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [key, v] : collectives)
    list.push_back({{"kind", key.first}, {"group", key.second}, {"count", v.first}, {"bytes", v.second}});
  const auto layer = layer_pass_times(c);
  return {{"stage", c.stage}, {"ranks", c.ranks.size()},
          {"layer_pass_s", {{"forward", layer.forward}, {"backward", layer.backward}, {"recompute", layer.recompute}}}, {"ops", c.ops.size()}, {"compute_ops", compute},
          {"sends", sends}, {"recvs", recvs}, {"compute_s", t.compute_busy.value()}, {"host_ops", host},
          {"host_s", host_s}, {"collectives", list}};
}

// The share of the step the busiest stage's compute stream sits idle, with communication free: the bubble.
double bubble_fraction(const sim::Timeline& t) {
  Seconds busiest;
  for (const auto& c : t.classes) busiest = std::max(busiest, c.compute_busy);
  return t.step_time.value() > 0 ? 1.0 - busiest / t.step_time : 0.0;
}

bool has_host_ops(const workloads::StepGraph& g) {
  for (const auto& c : g.classes)
    for (const auto& op : c.ops)
      if (std::holds_alternative<workloads::HostOp>(op.body)) return true;
  return false;
}

// The communication-free step split into the pipeline's bubble (played without host ops) and the waits on the
// host (what the host ops add), each a share of the step with them.
struct ComputeOnly {
  bool host = false;   // the graph has host ops
  double bubble = 0, host_wait = 0;
};

ComputeOnly compute_only_shares(const workloads::StepGraph& g, const sim::Timeline& compute_only) {
  if (!has_host_ops(g)) return {false, bubble_fraction(compute_only), 0.0};
  const sim::Timeline bare = sim::play_analytic(workloads::without_host_ops(g), sim::free_communication());
  const double step = compute_only.step_time.value();
  if (step <= 0) return {true, 0.0, 0.0};
  const double host = std::max(0.0, step - bare.step_time.value()) / step;
  return {true, bubble_fraction(bare) * bare.step_time.value() / step, host};
}

}  // namespace

nlohmann::json step_graph_json(const workloads::StepGraph& g, const sim::Timeline& compute_only) {
  const ComputeOnly shares = compute_only_shares(g, compute_only);
  nlohmann::json classes = nlohmann::json::array();
  for (std::size_t i = 0; i < g.classes.size(); ++i) classes.push_back(class_json(g.classes[i], compute_only.classes[i]));
  return {{"ranks", g.placement.ranks()},
          {"micro_batches", g.micro_batches},
          {"granularity", g.granularity == workloads::Granularity::Layer ? "layer" : "kernel"},
          {"model_flops", workloads::model_flops(g).value()},
          {"hardware_flops", workloads::hardware_flops(g).value()},
          {"compute_only_step_s", compute_only.step_time.value()},
          {"bubble_fraction", shares.bubble},
          {"host_wait_fraction", shares.host_wait},
          {"classes", classes}};
}

std::string step_graph_table(const std::string& name, const workloads::StepGraph& g, const sim::Timeline& compute_only) {
  std::string out = fmt::format("{}: {}", name, workloads::summary(g));
  const ComputeOnly shares = compute_only_shares(g, compute_only);
  if (shares.host)
    out += fmt::format("  compute, host and pipeline only (communication free): step {:.4f} s, bubble {:.1f} %, waiting on "
                       "the host {:.1f} %\n",
                       compute_only.step_time.value(), 100.0 * shares.bubble, 100.0 * shares.host_wait);
  else
    out += fmt::format("  compute and pipeline only (communication free): step {:.4f} s, bubble {:.1f} %\n",
                       compute_only.step_time.value(), 100.0 * shares.bubble);
  const auto layer = layer_pass_times(g.classes.front());
  out += fmt::format("  one layer pass on stage 0, compute only: forward {:.3f} ms, backward {:.3f} ms, recompute {:.3f} ms\n",
                     layer.forward * 1e3, layer.backward * 1e3, layer.recompute * 1e3);
  return out;
}

}  // namespace dtsim::results
