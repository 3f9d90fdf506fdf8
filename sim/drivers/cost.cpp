#include "sim/drivers/cost.hpp"

#include <fmt/format.h>

#include <set>

#include "topology/catalog.hpp"
#include "topology/error.hpp"
#include "workloads/lora.hpp"
#include "workloads/memory_plan.hpp"

namespace dtsim::drivers {

using nlohmann::json;

topology::BillOfMaterials scenario_bom(const scenario::Scenario& s, const topology::Topology& topo) {
  auto bom = topology::bill_of_materials(s.cluster, topo);
  for (auto& item : bom.items) {
    if (item.kind == topology::PartKind::Gpu && s.cost.gpu_usd) item.unit = Dollars(*s.cost.gpu_usd);
    const auto it = s.cost.parts.find(item.name);
    if (it == s.cost.parts.end()) continue;
    if (it->second.usd) item.unit = Dollars(*it->second.usd);
    if (it->second.watts) item.unit_power = Watts(*it->second.watts);
  }
  return bom;
}

results::Prices scenario_prices(const scenario::Scenario& s, const topology::BillOfMaterials& bom) {
  results::Prices p;
  p.mode = s.cost.mode;
  p.gpu_hour = Dollars(s.cost.gpu_hour_usd.value_or(s.cluster.gpu.price_per_hour.value()));
  p.capital = bom.total();
  p.years = s.cost.years.value_or(topology::site_defaults().years);
  p.kwh_usd = s.cost.kwh_usd.value_or(topology::site_defaults().kwh_usd);
  p.pue = s.cost.pue.value_or(topology::site_defaults().pue);
  if (p.mode == results::CostMode::Ownership)
    for (const auto& item : bom.items)
      if (!item.unit)
        throw InputError("cost.mode", "ownership",
                         fmt::format("needs every part of the bill priced; the catalog has no price for '{}' ({} of them):",
                                     item.name, item.count),
                         "cost.mode: rental (no catalog part of that family and speed exists for cost.parts to price)",
                         s.file);
  return p;
}

results::RunLength run_length(const scenario::Scenario& s) {
  if (!s.workload || !s.workload->training) return {};
  return {s.workload->training->tokens, s.workload->training->steps};
}

double tokens_per_step(const workloads::Workload& w) {
  return static_cast<double>(w.training->global_batch) * w.model.seq_length;
}

RunModel run_model(const scenario::Scenario& s, const topology::BillOfMaterials& bom, Seconds step, double steps) {
  const workloads::Workload& w = *s.workload;
  const workloads::TrainingSpec& t = *w.training;
  const int gpus = w.plan.tp * w.plan.pp * w.plan.cp * w.plan.dp;
  const results::ClusterCounts counts{gpus, std::max(1, s.cluster.servers()), static_cast<int>(bom.count(topology::PartKind::Nic)),
                                      static_cast<int>(bom.count(topology::PartKind::Switch))};
  const scenario::ReliabilitySpec& r = s.reliability;
  // A checkpoint holds every trained parameter's weight, master copy and optimizer states once (Megatron's
  // distributed checkpoint): the memory plan's per-parameter bytes over the whole model; with LoRA the adapters
  // only (a PEFT checkpoint: the frozen model is read from its own files).
  const double per_param = workloads::bytes_per_element(t.weight_dtype) + workloads::optimizer_bytes_per_param(t);
  const double bytes = workloads::trained_parameter_count(w.model, t) * per_param;
  const double write = 1e9 * s.storage.write_GBps.value_or(scenario::kStorageGBpsPerGpu * gpus);
  const double read = 1e9 * s.storage.read_GBps.value_or(scenario::kStorageGBpsPerGpu * gpus);
  results::RunInputs in;
  in.work = Seconds(step.value() * steps);
  in.failures_per_hour = results::failures_per_hour(r.failures, counts);
  if (r.async) {
    // Async: training stops only while each GPU copies its shard (the memory plan's most loaded GPU) to host memory
    // over its PCIe link; the write follows in the background.
    const auto plan = workloads::plan_memory(w, s.cluster.gpu);
    const double shard = plan.parts.params.value() + plan.parts.optimizer.value();
    const auto& gpu = s.cluster.gpu;
    const auto& host = topology::host_memory_link(gpu);
    in.checkpoint_block = Seconds(shard / (host.bandwidth.value() * host.efficiency));
    in.checkpoint_lag = Seconds(bytes / write);
  } else {
    in.checkpoint_block = Seconds(bytes / write);
  }
  in.restart = Seconds(r.restart_s + bytes / read);
  if (r.interval_s) in.interval = Seconds(*r.interval_s);
  in.repair_failures_per_hour = results::failures_per_hour(r.failures, counts, true);
  results::Recovery& rec = in.recovery;
  rec.mode = r.on_failure;
  if (r.repair_s) rec.repair = Seconds(*r.repair_s);
  rec.spares = r.spares;
  rec.dp = w.plan.dp;
  // A server out stops every data-parallel replica it holds a GPU of: the distinct replicas among the first
  // server's ranks under the plan's rank order.
  const workloads::Placement placement(w.plan);
  std::set<int> replicas;
  for (int k = 0; k < std::min(s.cluster.gpus_per_server(), placement.ranks()); ++k) replicas.insert(placement.coord(k).dp);
  rec.replicas_per_server = static_cast<double>(std::max<std::size_t>(1, replicas.size()));
  if (rec.mode == results::OnFailure::Shrink && rec.replicas_per_server >= rec.dp)
    throw InputError("reliability.on_failure", "shrink",
                     fmt::format("leaves nothing to run on: a server holds {:g} of the plan's {} data-parallel replicas",
                                 rec.replicas_per_server, rec.dp),
                     "restart or spare, or a plan with more replicas than a server holds",
                     scenario::locate(s, "reliability.on_failure"));
  return {in, counts};
}

results::TrainingRun training_run(const scenario::Scenario& s, const topology::BillOfMaterials& bom, Seconds step,
                                  double steps) {
  return results::expected_run(run_model(s, bom, step, steps).inputs);
}

Accounting account(const scenario::Scenario& s, const topology::BillOfMaterials& bom, Joules gpu_energy, Seconds step) {
  Accounting a;
  a.prices = scenario_prices(s, bom);
  a.tokens_per_step = tokens_per_step(*s.workload);
  a.energy = results::step_energy(gpu_energy, step, bom.network_power(), topology::power_model(), a.prices.pue);
  a.cost = results::training_cost(step, a.tokens_per_step, static_cast<int>(bom.count(topology::PartKind::Gpu)), a.energy,
                                  a.prices, run_length(s));
  a.gpus = static_cast<int>(bom.count(topology::PartKind::Gpu));
  a.recovery.mode = s.reliability.on_failure;
  a.held_gpus = a.gpus + (s.reliability.on_failure == results::OnFailure::Spare ? s.reliability.spares * s.cluster.gpus_per_server() : 0);
  if (a.cost.steps) {
    const RunModel model = run_model(s, bom, step, *a.cost.steps);
    a.run = results::expected_run(model.inputs);
    if (s.reliability.seed)
      a.sampled = results::sample_run(model.inputs, *a.run, s.reliability.failures, model.counts, *s.reliability.seed);
  }
  return a;
}

void add_accounting(json& row, const Accounting& a, Seconds step) {
  row["energy"] = results::energy_json(a.energy, step, a.tokens_per_step, a.cost, a.prices.pue);
  row["cost"] = results::cost_json(a.cost, a.prices);
  if (a.run) {
    const auto usd = a.cost.total ? std::optional<double>(a.cost.total->value()) : std::nullopt;
    const auto mwh = a.cost.energy ? std::optional<double>(a.cost.energy->value() / 3.6e9) : std::nullopt;
    row["training_run"] = results::training_run_json(*a.run, a.recovery, a.gpus, a.held_gpus, usd, mwh);
    if (a.sampled) row["training_run"]["sampled"] = results::sampled_run_json(*a.sampled);
  }
}

json bom_json(const topology::BillOfMaterials& bom) {
  json items = json::array();
  for (const auto& item : bom.items) {
    const auto total = item.total();
    json j = {{"kind", std::string(topology::to_string(item.kind))},
              {"name", item.name},
              {"role", item.role},
              {"count", item.count},
              {"unit_usd", item.unit ? json(item.unit->value()) : json(nullptr)},
              {"total_usd", total ? json(total->value()) : json(nullptr)},
              {"unit_W", item.unit_power.value()}};
    if (!item.note.empty()) j["note"] = item.note;
    items.push_back(j);
  }
  return {{"items", items},
          {"total_usd", bom.total().value()},
          {"complete", bom.complete()},
          {"network_W", bom.network_power().value()},
          {"switch_tiers", bom.switch_tiers},
          {"notes", bom.notes}};
}

std::string bom_table(const topology::BillOfMaterials& bom) {
  std::string out = "  bill of materials\n";
  for (const auto& item : bom.items) {
    const auto total = item.total();
    out += fmt::format("    {:>7} x {:<22} {:<36} {:>14} {:>16}\n", item.count, item.name, item.role,
                       item.unit ? fmt::format("{:.0f} USD", item.unit->value()) : "unpriced",
                       total ? fmt::format("{:.0f} USD", total->value()) : "-");
  }
  out += fmt::format("    total {:.0f} USD{}; network {:.1f} kW in service\n", bom.total().value(),
                     bom.complete() ? "" : " (some parts unpriced)", bom.network_power().value() / 1e3);
  for (const auto& note : bom.notes) out += fmt::format("    note: {}\n", note);
  return out;
}

}  // namespace dtsim::drivers
