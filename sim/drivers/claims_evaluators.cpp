// What dtsim computes for each claim of the founding article: one evaluator per claim id, each reading the claim
// scenarios (scenarios/claims/) through a ClaimContext and returning its figures by key. The keys are the ones
// scenarios/claims/claims.yaml gives the article's figures under; claims_command.cpp checks that the two agree.
#include <algorithm>
#include <fmt/format.h>

#include "sim/drivers/claims.hpp"
#include "sim/drivers/collective.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/run.hpp"
#include "sim/drivers/plan.hpp"
#include "topology/number_formats.hpp"
#include "workloads/decode.hpp"
#include "sim/drivers/auto_knobs.hpp"

namespace dtsim::drivers {

using nlohmann::json;
using topology::Precision;

const scenario::Scenario& ClaimContext::doc(const std::string& file, const std::string& name) {
  for (const auto& s : docs(file))
    if (s.name == name) return s;
  throw InputError("claims", file == "default" ? "the default scenario" : fmt::format("{}/{}", dir_, file),
                   fmt::format("has no document named {}", name), "the scenario documents claims_evaluators.cpp reads");
}

std::vector<scenario::Scenario>& ClaimContext::docs(const std::string& file) {
  read_.insert(file);
  auto it = files_.find(file);
  if (it == files_.end()) {
    auto loaded = file == "default" ? scenario::load_scenarios(scenario::default_scenario_text(), "<default scenario>")
                                    : scenario::load_scenario_file(dir_ + "/" + file);
    for (scenario::Scenario& s : loaded) s = resolve_auto(std::move(s));
    it = files_.emplace(file, std::move(loaded)).first;
  }
  return it->second;
}

workloads::MemoryPlan ClaimContext::memory(const std::string& file, const std::string& name) {
  const scenario::Scenario& s = doc(file, name);
  return workloads::plan_memory(*s.workload, s.cluster.gpu);
}

const json& ClaimContext::run(const std::string& file, const std::string& name) {
  const std::string key = file + "#" + name;
  auto it = runs_.find(key);
  if (it == runs_.end()) it = runs_.emplace(key, run_point(doc(file, name))).first;
  else read_.insert(file);
  return it->second;
}

double ClaimContext::step(const std::string& file, const std::string& name) {
  return run(file, name).at("step_time_s").get<double>();
}

namespace {

constexpr double kGB = 1e9;
using Parts = workloads::MemoryParts;

double part(const workloads::MemoryPlan& p, Bytes Parts::*field) { return (p.parts.*field).value(); }

// Weights + gradients + optimizer states of the whole model: the plan's parts for an unsplit, unsharded plan.
double states(ClaimContext& cx, const std::string& file, const std::string& name) {
  const scenario::Scenario& s = cx.doc(file, name);
  const auto& plan = s.workload->plan;
  if (plan.tp * plan.pp * plan.dp != 1)
    throw InputError("claims", name, "splits the model; the whole model's states need", "tp = pp = dp = 1");
  const auto p = cx.memory(file, name);
  return part(p, &Parts::params) + part(p, &Parts::grads) + part(p, &Parts::optimizer);
}

// The whole model's weights at a serving document's weight precision, and its whole KV cache.
double weights_GB(ClaimContext& cx, const std::string& file, const std::string& name) {
  const auto& w = *cx.doc(file, name).workload;
  return workloads::parameter_count(w.model) * workloads::bytes_per_element(w.inference->weights) / kGB;
}
double kv_GB(ClaimContext& cx, const std::string& file, const std::string& name) {
  const auto& w = *cx.doc(file, name).workload;
  return workloads::kv_cache_bytes(w.model, *w.inference, 1).value() / kGB;
}

double dense_peak(const topology::GpuSpec& gpu, Precision p) { return gpu.peak_for(p).value_or(FlopsPerSecond(0)).value(); }

// One all-reduce of `bytes` over every GPU of the scenario's cluster, as the scenario's collectives run.
Seconds all_reduce_over(const scenario::Scenario& s, double bytes) {
  return collective_times(s.cluster, workloads::CollectiveKind::AllReduce, s.simulation.collective_algo, {Bytes(bytes)},
                          s.simulation.max_channels)
      .at(0)
      .time;
}

ClaimValues s1(ClaimContext& cx) {
  const std::string f = "s01-70b-training-states.yaml";
  return {{"states_16B_TB", states(cx, f, "s01-llama2-70b-states-16B") / 1e12},
          {"states_18B_TB", states(cx, f, "s01-llama2-70b-states-18B") / 1e12}};
}

ClaimValues s2(ClaimContext&) {
  const auto fp16 = *topology::float_format(Precision::Fp16);
  const auto bf16 = *topology::float_format(Precision::Bf16);
  return {{"fp16_max", fp16.max_finite()},
          {"fp16_min_normal", fp16.min_normal()},
          {"bf16_max", bf16.max_finite()},
          {"bf16_min_normal", bf16.min_normal()},
          {"bf16_fp32_exponent", bf16.exponent_bits == topology::float_format(Precision::Fp32)->exponent_bits}};
}

ClaimValues s3(ClaimContext& cx) {
  const std::string f = "s03-quantisation-saving.yaml";
  const auto fp32 = cx.memory(f, "s03-llama2-7b-fp32"), int8 = cx.memory(f, "s03-llama2-7b-int8");
  return {{"weights_saving_pct", 100 * (1 - part(int8, &Parts::params) / part(fp32, &Parts::params))},
          {"total_saving_pct", 100 * (1 - int8.per_gpu.value() / fp32.per_gpu.value())}};
}

ClaimValues s4(ClaimContext& cx) {
  const std::string f = "s04-llama-70b-weights.yaml";
  return {{"fp32_GB", weights_GB(cx, f, "s04-llama2-70b-fp32-4xa100")},
          {"fp32_fits_4xa100", cx.memory(f, "s04-llama2-70b-fp32-4xa100").fits},
          {"bf16_GB", weights_GB(cx, f, "s04-llama2-70b-bf16-2xh100")},
          {"bf16_fits_2xh100", cx.memory(f, "s04-llama2-70b-bf16-2xh100").fits},
          {"int4_GB", weights_GB(cx, f, "s04-llama2-70b-int4-1xrtx4090")},
          {"int4_fits_1x4090", cx.memory(f, "s04-llama2-70b-int4-1xrtx4090").fits},
          {"int4_fits_2x4090", cx.memory(f, "s04-llama2-70b-int4-2xrtx4090").fits}};
}

ClaimValues s5(ClaimContext& cx) {
  const std::string f = "s05-7b-training-a100.yaml";
  const auto with = cx.memory(f, "s05-llama2-7b-a100-80gb");
  return {{"total_GB", with.per_gpu.value() / kGB},
          {"total_no_master_GB", cx.memory(f, "s05-llama2-7b-a100-80gb-no-master").per_gpu.value() / kGB},
          {"master_GB", workloads::parameter_count(cx.doc(f, "s05-llama2-7b-a100-80gb").workload->model) * 4 / kGB},
          {"activations_GB", part(with, &Parts::activations) / kGB},
          {"fits_a100_80gb", with.fits}};
}

ClaimValues s6(ClaimContext& cx) {
  const std::string f = "s06-memory-savings.yaml";
  const auto act = [&](const char* name) { return part(cx.memory(f, name), &Parts::activations) / kGB; };
  const auto compute = [&](const char* name) { return cx.run(f, name).at("breakdown_s").at("compute").get<double>(); };
  // The optimizer's state per parameter, the fp32 master copy apart (both optimizers keep it).
  const auto state_B = [&](const char* name) {
    return workloads::optimizer_state_bytes_per_param(*cx.doc(f, name).workload->training);
  };
  return {{"act_selective_GB", act("s06-llama2-7b-bf16-selective")},
          {"act_full_GB", act("s06-llama2-7b-bf16-full-recompute")},
          {"recompute_compute_pct",
           100 * (compute("s06-llama2-7b-bf16-full-recompute") / compute("s06-llama2-7b-bf16-no-recompute") - 1)},
          {"adamw_state_B", state_B("s06-llama2-7b-bf16-selective")},
          {"adafactor_state_B", state_B("s06-llama2-7b-bf16-adafactor")},
          {"mixed_saving_pct", 100 * (1 - cx.memory(f, "s06-llama2-7b-bf16-selective").per_gpu.value() /
                                              cx.memory(f, "s06-llama2-7b-fp32").per_gpu.value())}};
}

ClaimValues s7(ClaimContext& cx) {
  const std::string f = "s07-llama-7b-128k-kv-cache.yaml";
  return {{"kv_GB", kv_GB(cx, f, "s07-llama-7b-128k-bf16-h200")},
          {"kv_fp32_GB", kv_GB(cx, f, "s07-llama-7b-128k-fp32-cache-h200")},
          {"fits_h200", cx.memory(f, "s07-llama-7b-128k-bf16-h200").fits},
          {"fits_h100", cx.memory(f, "s07-llama-7b-128k-bf16-h100").fits}};
}

// A serving pass's FLOPs over its time against the GPU's dense peak in the precision it computes in (%).
double serving_utilisation_pct(ClaimContext& cx, const std::string& file, const std::string& name, const char* phase) {
  const json& r = cx.run(file, name);
  const json& p = r.at("phases").at(phase);
  const scenario::Scenario& s = cx.doc(file, name);
  const auto precision = topology::parse_precision(r.at("compute_precision").get<std::string>());
  const double peak = s.cluster.gpu.peak_for(*precision)->value() * r.at("gpus").get<double>();
  return 100 * p.at("flops").get<double>() / p.at("time_s").get<double>() / peak;
}

ClaimValues s8(ClaimContext& cx) {
  const std::string f = "s08-bert-base-serving.yaml";
  const auto regime = [&](const char* name) {
    return cx.run(f, name).at("phases").at("prefill").at("regime").get<std::string>();
  };
  return {{"util_b1_pct", serving_utilisation_pct(cx, f, "s08-bert-base-batch1", "prefill")},
          {"util_b32_pct", serving_utilisation_pct(cx, f, "s08-bert-base-batch32", "prefill")},
          {"memory_bound_b1", regime("s08-bert-base-batch1") == "memory-bound"},
          {"compute_bound_b32", regime("s08-bert-base-batch32") == "compute-bound"}};
}

ClaimValues s9(ClaimContext& cx) {
  const std::string f = "s09-gpt3-175b-decode.yaml";
  const auto intensity = [&](const char* name) {
    const auto& w = *cx.doc(f, name).workload;
    return workloads::decode_step(w.model, *w.inference).intensity();
  };
  const scenario::Scenario& one = cx.doc(f, "s09-gpt3-175b-decode-batch1");
  const double ridge = one.cluster.gpu.ridge_point(one.workload->inference->weights);
  const double b1 = intensity("s09-gpt3-175b-decode-batch1");
  // The step timed on eight H100s against the time its bytes take at full HBM bandwidth.
  const json& timed = cx.run(f, "s09-gpt3-175b-decode-8xh100");
  const scenario::Scenario& eight = cx.doc(f, "s09-gpt3-175b-decode-8xh100");
  const double decode_s = timed.at("tpot_s").get<double>();
  const double bound_s = timed.at("phases").at("decode").at("bytes").get<double>() /
                         (eight.cluster.gpu.memory_bandwidth.value() * timed.at("gpus").get<double>());
  return {{"decode_intensity_b1", b1},
          {"decode_intensity_b32", intensity("s09-gpt3-175b-decode-batch32")},
          {"ridge_h100", ridge},
          {"below_ridge", b1 < ridge / 10},
          {"decode_step_8xh100_ms", 1e3 * decode_s},
          {"hbm_bound_8xh100_ms", 1e3 * bound_s}};
}

ClaimValues s10(ClaimContext& cx) {
  const json& rf = cx.run("default", "8xa100-nvswitch").at("roofline");
  double layer = 0, elementwise = 0;
  for (const auto& k : rf.at("kernels")) {
    if (k.at("scope") != "layer") continue;
    layer += k.at("time_s").get<double>();
    if (k.at("flops").get<double>() <= 0) elementwise += k.at("time_s").get<double>();
  }
  const double share = elementwise / layer;
  return {{"elementwise_share_pct", 100 * share}, {"fusion_bound_pct", 100 * (1 / (1 - share) - 1)}};
}

ClaimValues s11(ClaimContext& cx) {
  const std::string f = "s11-int8-a100.yaml";
  const char* fp16 = "s11-llama2-7b-fp16-a100";
  const char* int8 = "s11-llama2-7b-int8-a100";
  const auto figure = [&](const char* name, const char* key) { return cx.run(f, name).at(key).get<double>(); };
  const auto energy = [&](const char* name) { return cx.run(f, name).at("energy").at("gpu_J_per_token").get<double>(); };
  return {{"weights_saving_pct", 100 * (1 - part(cx.memory(f, int8), &Parts::params) / part(cx.memory(f, fp16), &Parts::params))},
          {"decode_speedup_pct", 100 * (figure(int8, "decode_tokens_per_s") / figure(fp16, "decode_tokens_per_s") - 1)},
          {"energy_saving_pct", 100 * (1 - energy(int8) / energy(fp16))}};
}

ClaimValues s12(ClaimContext& cx) {
  const std::string f = "s12-h100-vs-a100-175b.yaml";
  const double a100 = cx.step(f, "s12-gpt3-175b-64xa100"), h100 = cx.step(f, "s12-gpt3-175b-64xh100");
  return {{"speedup", a100 / h100},
          {"speedup_fp8", a100 / cx.step(f, "s12-gpt3-175b-64xh100-fp8")},
          {"a100_step_s", a100},
          {"h100_step_s", h100}};
}

ClaimValues s13(ClaimContext& cx) {
  const std::string f = "s13-700b-int4-mi300x.yaml";
  return {{"weights_GB", weights_GB(cx, f, "s13-700b-int4-1xmi300x")},
          {"fits_1xmi300x", cx.memory(f, "s13-700b-int4-1xmi300x").fits},
          {"fits_2xmi300x", cx.memory(f, "s13-700b-int4-2xmi300x").fits}};
}

ClaimValues s14(ClaimContext& cx) {
  const double rtx = dense_peak(topology::find_gpu("rtx4090", "claims"), Precision::Fp16) / 1e12;
  const double v100 = dense_peak(topology::find_gpu("v100-sxm2-32gb", "claims"), Precision::Fp16) / 1e12;
  const std::string f = "s14-70b-int4-rtx4090.yaml";
  return {{"fits_1x4090", cx.memory(f, "s14-llama2-70b-int4-1xrtx4090").fits},
          {"int4_GB", weights_GB(cx, f, "s14-llama2-70b-int4-1xrtx4090")},
          {"rtx4090_fp16_TFLOPS", rtx},
          {"v100_fp16_TFLOPS", v100},
          {"beats_v100", rtx > v100}};
}

ClaimValues s15(ClaimContext& cx) {
  const auto eff = [&](const char* name) { return 100 * cx.run("default", name).at("scaling_efficiency").get<double>(); };
  return {{"nvswitch_pct", eff("8xa100-nvswitch")}, {"pcie_pct", eff("8xa100-pcie4-server")}, {"ethernet_pct", eff("8xa100-100gbe")}};
}

ClaimValues s16(ClaimContext& cx) {
  const json& nvs = cx.run("default", "8xa100-nvswitch");
  const double pcie_step = cx.step("default", "8xa100-pcie4-server");
  return {{"tp_GB", nvs.at("tp_comm_bytes").get<double>() / kGB},
          {"allreduce_2GB_nvswitch_ms", all_reduce_over(cx.doc("default", "8xa100-nvswitch"), 2e9).value() * 1e3},
          {"allreduce_2GB_pcie_ms", all_reduce_over(cx.doc("default", "8xa100-pcie4-server"), 2e9).value() * 1e3},
          {"pcie_slowdown_pct", 100 * (pcie_step / nvs.at("step_time_s").get<double>() - 1)}};
}

ClaimValues s17(ClaimContext& cx) {
  const std::string f = "s17-4gpu-topologies.yaml";
  const double nvs = cx.step(f, "s17-4xa100-nvswitch"), mesh = cx.step(f, "s17-4xa100-full-mesh");
  const double ring = cx.step(f, "s17-4xa100-ring"), star = cx.step(f, "s17-4xa100-star");
  return {{"nvswitch_best", nvs <= std::min({mesh, ring, star}) * 1.01},
          {"ring_between", nvs < ring && ring < star},
          {"star_worst", star > std::max({nvs, mesh, ring})},
          {"star_vs_nvswitch_pct", 100 * (star / nvs - 1)},
          {"mesh_vs_nvswitch_pct", 100 * (mesh / nvs - 1)}};
}

// The article's premise: the gradients synchronised every 10 ms.
constexpr double kSyncPeriod = 0.010;

ClaimValues s18(ClaimContext& cx) {
  const scenario::Scenario& s = cx.doc("s18-70b-gradient-sync.yaml", "s18-llama2-70b-8xh100");
  const auto& w = *s.workload;
  const double grads = workloads::parameter_count(w.model) * workloads::bytes_per_element(w.training->grad_dtype);
  const int n = s.cluster.gpus();
  const double link_per_gpu = s.cluster.gpu_budget().value();   // NVLink per GPU, one direction
  const double per_gpu = 2.0 * (n - 1) / n * grads / kSyncPeriod;
  return {{"total_TBps", grads / kSyncPeriod / 1e12},
          {"per_gpu_TBps", per_gpu / 1e12},
          {"nvlink_per_gpu_TBps", link_per_gpu / 1e12},
          {"exceeds_nvlink4", per_gpu > link_per_gpu},
          {"allreduce_ms", all_reduce_over(s, grads).value() * 1e3}};
}

// Per model, the smallest cluster of its document's kind (GPU, machine, fabric) on which the planner finds a plan
// that fits, and the best plan's step time at that size (searched, confirmed on the SimGrid engine).
ClaimValues s19(ClaimContext& cx) {
  const std::string f = "s19-sizing-guide.yaml";
  constexpr int kMostGpus = 1024;
  ClaimValues out;
  for (const auto& model : std::vector<std::pair<std::string, std::string>>{
           {"7b", "llama2-7b"}, {"13b", "llama2-13b"}, {"70b", "llama2-70b"}, {"175b", "gpt3-175b"}}) {
    // Named, not structured bindings: `preset` is captured below, which clang 14 refuses for a structured binding.
    const std::string& tag = model.first;
    const std::string& preset = model.second;
    const auto docs = cx.docs(f);
    const auto doc = std::ranges::find_if(docs, [&](const scenario::Scenario& s) { return s.workload && s.workload->model.name == preset; });
    if (doc == docs.end()) throw InputError("claims", f, fmt::format("has no document for {}", preset), "one per model");
    const auto smallest = smallest_cluster(*doc, kMostGpus);
    if (!smallest)
      throw InputError("claims", f, fmt::format("{} fits on no cluster of its kind up to {} GPUs", preset, kMostGpus),
                       "a model that some cluster trains");
    out["gpus_" + tag] = static_cast<double>(smallest->gpus);
    out["step_" + tag + "_s"] = plan_point(smallest->scenario, 1, 1, Objective::Time).rows.front().step();
  }
  return out;
}

ClaimValues s20(ClaimContext& cx) {
  const std::string f = "s20-70b-serving-costs.yaml";
  const auto tokens = [&](const char* name) { return cx.run(f, name).at("decode_tokens_per_s").get<double>(); };
  const auto cost = [&](const char* name, const char* key) { return cx.run(f, name).at("cost").at(key).get<double>(); };
  return {{"tokens_per_s_2xh100_pcie", tokens("s20-llama2-70b-bf16-2xh100-pcie")},
          {"usd_per_hour_2xh100_pcie", cost("s20-llama2-70b-bf16-2xh100-pcie", "usd_per_hour")},
          {"tokens_per_s_4xt4", tokens("s20-llama2-70b-int4-4xt4")},
          {"usd_per_hour_4xt4", cost("s20-llama2-70b-int4-4xt4", "usd_per_hour")},
          {"tokens_per_s_2xrtx4090", tokens("s20-llama2-70b-int4-2xrtx4090")},
          {"gpus_usd_2xrtx4090", cost("s20-llama2-70b-int4-2xrtx4090", "gpus_usd")}};
}

ClaimValues s21(ClaimContext& cx) {
  const std::string f = "s21-rules-of-thumb.yaml";
  return {{"train_7b_GB", cx.memory(f, "s21-train-llama2-7b-h200").per_gpu.value() / kGB},
          {"serve_7b_GB", cx.memory(f, "s21-serve-llama2-7b-int4-rtx4090").per_gpu.value() / kGB},
          {"kv_70b_GB", kv_GB(cx, f, "s21-serve-llama2-70b-int4-2xrtx4090")}};
}

}  // namespace

const std::map<std::string, ClaimEvaluator>& claim_evaluators() {
  static const std::map<std::string, ClaimEvaluator> m = {
      {"S1", s1},   {"S2", s2},   {"S3", s3},   {"S4", s4},   {"S5", s5},   {"S6", s6},   {"S7", s7},
      {"S8", s8},   {"S9", s9},   {"S10", s10}, {"S11", s11}, {"S12", s12}, {"S13", s13}, {"S14", s14},
      {"S15", s15}, {"S16", s16}, {"S17", s17}, {"S18", s18}, {"S19", s19}, {"S20", s20}, {"S21", s21}};
  return m;
}

}  // namespace dtsim::drivers
