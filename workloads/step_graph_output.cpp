// StepGraph names, FLOP totals, the graph without its host ops, the summary and the DOT dump.
#include <fmt/format.h>
#include <map>

#include "topology/error.hpp"
#include "topology/name_table.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::workloads {
namespace {

using topology::NameTable;
using topology::name_of;
using topology::value_of;

constexpr NameTable<CollectiveKind, 5> kCollectiveKinds{{{CollectiveKind::AllReduce, "all-reduce"},
                                                         {CollectiveKind::AllGather, "all-gather"},
                                                         {CollectiveKind::ReduceScatter, "reduce-scatter"},
                                                         {CollectiveKind::AllToAll, "all-to-all"},
                                                         {CollectiveKind::Broadcast, "broadcast"}}};
constexpr NameTable<Group, kGroupCount> kGroups{{{Group::Tp, "tp"},
                                       {Group::Dp, "dp"},
                                       {Group::Embedding, "embedding"},
                                       {Group::Ep, "ep"},
                                       {Group::ExpertTp, "etp"},
                                       {Group::ExpertDp, "edp"},
                                       {Group::EpNode, "ep-node"},
                                       {Group::EpRail, "ep-rail"},
                                       {Group::Cp, "cp"},
                                       {Group::Shard, "shard"},
                                       {Group::Replica, "replica"}}};
constexpr NameTable<CommPurpose, 9> kPurposes{{{CommPurpose::TensorParallel, "tensor-parallel"},
                                               {CommPurpose::SequenceParallel, "sequence-parallel"},
                                               {CommPurpose::PipelineGather, "pipeline-gather"},
                                               {CommPurpose::DataParallelGrads, "data-parallel-grads"},
                                               {CommPurpose::ZeroParamGather, "zero-param-gather"},
                                               {CommPurpose::EmbeddingGrads, "embedding-grads"},
                                               {CommPurpose::ExpertParallel, "expert-parallel"},
                                               {CommPurpose::ExpertGrads, "expert-grads"},
                                               {CommPurpose::ContextParallel, "context-parallel"}}};
constexpr NameTable<Scope, 4> kScopes{{{Scope::Layer, "layer"}, {Scope::Embedding, "embedding"},
                                       {Scope::Logits, "logits"}, {Scope::Optimizer, "optimizer"}}};

FlopCount flops(const StepGraph& g, bool with_recompute) {
  FlopCount total;
  for (const RankClass& c : g.classes) {
    FlopCount per_rank;
    for (const Op& op : c.ops)
      if (const auto* comp = std::get_if<ComputeOp>(&op.body); comp && (with_recompute || comp->pass != Pass::Recompute))
        per_rank += comp->flops;
    total += per_rank * static_cast<double>(c.ranks.size());
  }
  return total;
}

std::string label(const Op& op) {
  return std::visit(
      [](const auto& body) -> std::string {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, ComputeOp>) {
          const std::string what = body.kernel ? std::string(to_string(*body.kernel)) : std::string(to_string(body.scope));
          return fmt::format("{} {} L{} mb{}\\n{:.3f} ms", to_string(body.pass), what, body.layer, body.micro_batch,
                             body.duration.value() * 1e3);
        } else if constexpr (std::is_same_v<T, CollectiveOp>) {
          return fmt::format("{} {}\\n{:.2f} MB", to_string(body.kind), to_string(body.group), body.bytes.value() / 1e6);
        } else if constexpr (std::is_same_v<T, HostOp>) {
          return fmt::format("host {} L{} mb{}\\n{:.3f} ms", to_string(body.pass), body.layer, body.micro_batch,
                             body.duration.value() * 1e3);
        } else if constexpr (std::is_same_v<T, SendOp>) {
          return fmt::format("send -> stage {}\\nmb{} {:.2f} MB", body.peer_stage, body.tag.micro_batch, body.bytes.value() / 1e6);
        } else {
          return fmt::format("recv <- stage {}\\nmb{} {:.2f} MB", body.peer_stage, body.tag.micro_batch, body.bytes.value() / 1e6);
        }
      },
      op.body);
}

std::string node(std::size_t cls, std::size_t op) { return fmt::format("s{}_{}", cls, op); }

// Sends and recvs of the whole graph, keyed by (sender stage, receiver stage, tag, cohort), for the cross-class edges.
void add_pipe_edges(const StepGraph& g, std::string& out) {
  std::map<std::tuple<int, int, int, int, int, int>, std::string> sends;
  for (std::size_t c = 0; c < g.classes.size(); ++c)
    for (std::size_t i = 0; i < g.classes[c].ops.size(); ++i)
      if (const auto* s = std::get_if<SendOp>(&g.classes[c].ops[i].body))
        sends[{g.classes[c].stage, s->peer_stage, s->tag.micro_batch, s->tag.chunk, static_cast<int>(s->tag.direction),
               g.classes[c].cohort}] = node(c, i);
  for (std::size_t c = 0; c < g.classes.size(); ++c)
    for (std::size_t i = 0; i < g.classes[c].ops.size(); ++i)
      if (const auto* r = std::get_if<RecvOp>(&g.classes[c].ops[i].body)) {
        auto it = sends.find({r->peer_stage, g.classes[c].stage, r->tag.micro_batch, r->tag.chunk, static_cast<int>(r->tag.direction),
                               g.classes[c].cohort});
        if (it != sends.end()) out += fmt::format("  {} -> {} [style=dashed, color=blue];\n", it->second, node(c, i));
      }
}

}  // namespace

std::string_view to_string(CollectiveKind k) { return name_of(kCollectiveKinds, k); }
std::string_view to_string(Group g) { return name_of(kGroups, g); }
std::string_view to_string(CommPurpose p) { return name_of(kPurposes, p); }
std::string_view to_string(Scope s) { return name_of(kScopes, s); }
std::optional<CollectiveKind> parse_collective_kind(std::string_view name) { return value_of(kCollectiveKinds, name); }

StepGraph without_host_ops(StepGraph g) {
  for (RankClass& c : g.classes) {
    std::vector<Op> kept;
    std::vector<Deps> becomes(c.ops.size());   // per op: the kept ops that stand for it
    for (std::size_t i = 0; i < c.ops.size(); ++i) {
      Deps deps;
      for (const auto d : c.ops[i].deps) deps.append(becomes[d].begin(), becomes[d].end());
      if (std::holds_alternative<HostOp>(c.ops[i].body)) {
        becomes[i] = std::move(deps);
        continue;
      }
      becomes[i] = {static_cast<std::uint32_t>(kept.size())};
      kept.push_back({std::move(c.ops[i].body), std::move(deps)});
    }
    c.ops = std::move(kept);
  }
  return g;
}

FlopCount model_flops(const StepGraph& g) { return flops(g, false); }
FlopCount hardware_flops(const StepGraph& g) { return flops(g, true); }

std::string summary(const StepGraph& g) {
  const auto& p = g.workload.plan;
  std::string extra;
  if (p.cp > 1) extra += fmt::format(" cp {}", p.cp);
  const int etp = g.workload.inference ? serving_expert_tp(p) : p.expert_tp();
  if (p.ep > 1 || etp != p.tp) extra += fmt::format(" ep {} etp {}", p.ep, etp);
  const bool cohorts = g.cohorts() > 1;
  std::string out = fmt::format("step graph: {} ranks (tp {} pp {} dp {}{} vpp {}), {} micro-batches per replica, {} rank classes\n",
                                g.placement.ranks(), p.tp, p.pp, p.dp, extra, p.vpp,
                                cohorts ? std::string("uneven") : std::to_string(g.micro_batches), g.classes.size());
  for (const RankClass& c : g.classes) {
    std::size_t compute = 0, sends = 0, recvs = 0, host = 0;
    int micro_batches = 0;
    Seconds busy, host_time;
    std::map<std::string, std::pair<std::size_t, Bytes>> collectives;   // "kind group" -> count, bytes
    for (const Op& op : c.ops) {
      if (const auto* comp = std::get_if<ComputeOp>(&op.body)) {
        ++compute;
        busy += comp->duration;
        micro_batches = std::max(micro_batches, comp->micro_batch + 1);
      }
      if (const auto* coll = std::get_if<CollectiveOp>(&op.body)) {
        auto& [n, bytes] = collectives[fmt::format("{} over {}", to_string(coll->kind), to_string(coll->group))];
        ++n;
        bytes += coll->bytes;
      }
      if (std::holds_alternative<SendOp>(op.body)) ++sends;
      if (std::holds_alternative<RecvOp>(op.body)) ++recvs;
      if (const auto* h = std::get_if<HostOp>(&op.body)) { ++host; host_time += h->duration; }
    }
    out += fmt::format("  stage {:>3} ({} ranks{}): {} ops: {} compute ({:.3f} s busy), {} send, {} recv", c.stage,
                       c.ranks.size(), cohorts ? fmt::format(", {} micro-batches each", micro_batches) : std::string(),
                       c.ops.size(), compute, busy.value(), sends, recvs);
    if (host > 0) out += fmt::format(", {} host ({:.3f} s issuing MoE layer passes)", host, host_time.value());
    out += "\n";
    for (const auto& [name, v] : collectives)
      out += fmt::format("      {:<32} {:>6} x, {:>12.3f} MB in all\n", name, v.first, v.second.value() / 1e6);
  }
  out += fmt::format("  FLOPs per step: model {:.4e}, with recompute {:.4e}\n", model_flops(g).value(), hardware_flops(g).value());
  return out;
}

std::string to_dot(const StepGraph& g, std::size_t max_ops) {
  std::size_t total = 0;
  for (const RankClass& c : g.classes) total += c.ops.size();
  if (total > max_ops)
    throw InputError("--dot", std::to_string(total), "the step graph is too large to draw: ops", fmt::format("at most {}", max_ops));
  std::string out = "digraph step {\n  rankdir=LR;\n  node [shape=box, fontsize=9];\n";
  for (std::size_t c = 0; c < g.classes.size(); ++c) {
    out += fmt::format("  subgraph cluster_{} {{\n    label=\"stage {} ({} ranks)\";\n", c, g.classes[c].stage, g.classes[c].ranks.size());
    for (std::size_t i = 0; i < g.classes[c].ops.size(); ++i) {
      const Op& op = g.classes[c].ops[i];
      const char* colour = std::holds_alternative<ComputeOp>(op.body) ? "lightgrey"
                           : std::holds_alternative<HostOp>(op.body) ? "lightblue"
                                                                     : "lightyellow";
      out += fmt::format("    {} [label=\"{}\", style=filled, fillcolor={}];\n", node(c, i), label(op), colour);
      for (auto d : op.deps) out += fmt::format("    {} -> {};\n", node(c, d), node(c, i));
    }
    out += "  }\n";
  }
  add_pipe_edges(g, out);
  out += "}\n";
  return out;
}

}  // namespace dtsim::workloads
