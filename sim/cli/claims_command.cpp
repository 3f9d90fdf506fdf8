// `dtsim claims`: every claim of the founding article (scenarios/claims/claims.yaml) with the article's figures
// beside dtsim's, computed from the claim scenarios, and a verdict computed from the numbers; as the markdown of
// docs/seed-claims.md or as JSON.
//
// What dtsim's figure for each key means is fixed here, one evaluator per claim; what the article says, the
// tolerances and the explanations are data in claims.yaml. A key the data names and no evaluator computes (or
// the reverse) is an error, so the page cannot silently lose a figure.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <variant>
#include <yaml-cpp/yaml.h>

#include "sim/cli/command_support.hpp"
#include "sim/cli/yaml_reader.hpp"
#include "topology/number_formats.hpp"
#include "workloads/decode.hpp"
#include "workloads/memory_plan.hpp"

#ifndef DTSIM_SOURCE_DIR
#error "DTSIM_SOURCE_DIR must name the source tree (the default claims directory)"
#endif

namespace dtsim::cli {
namespace {

using nlohmann::json;
using Value = std::variant<double, bool>;
using Values = std::map<std::string, Value>;
using topology::Precision;

struct Figure {
  std::string key;
  std::string what;
  std::optional<Value> article;   // none: a figure only dtsim gives
  double tolerance = 0.10;
  std::string where;              // file:line, for errors
};

struct Claim {
  std::string id;
  std::string section;
  std::string text;
  std::string status = "evaluated";   // evaluated | waiting | outside
  std::string missing;
  std::vector<std::string> scenarios;
  std::vector<Figure> figures;
  std::string why;
  std::string where;
};

// ---- claims.yaml ------------------------------------------------------------------------------------------

std::vector<std::string> string_list(const YamlMap& m, const YAML::Node& node, const std::string& key,
                                     const std::string& file) {
  std::vector<std::string> out;
  const YAML::Node list = node[key];
  if (!list.IsDefined() || list.IsNull()) return out;
  if (!list.IsSequence()) m.fail(key, "...", "not a list", "a list of file names");
  for (const auto& item : list) {
    if (!item.IsScalar()) throw InputError(m.dotted(key), "...", "not a file name", "a list of file names", location(file, item));
    out.push_back(item.Scalar());
  }
  return out;
}

Figure read_figure(const YAML::Node& node, const std::string& path, const std::string& file) {
  YamlMap m(node, path, file, nullptr);
  m.allow_only({"key", "what", "article", "tolerance"});
  Figure f;
  f.where = location(file, node);
  f.key = m.text("key").value_or("");
  if (f.key.empty()) m.fail("key", "", "missing", "the name of a figure dtsim computes");
  f.what = m.text("what").value_or("");
  if (f.what.empty()) m.fail("what", "", "missing", "a description of the figure");
  if (!m.has("article")) m.fail("article", "", "missing", "the article's number, true/false, or null");
  if (!m.is_null("article")) {
    const std::string v = *m.text("article");
    if (v == "true" || v == "false") {
      f.article = v == "true";
    } else {
      std::size_t used = 0;
      double d = 0;
      try {
        d = std::stod(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || !std::isfinite(d)) m.fail("article", v, "not a number", "a number, true, false or null");
      f.article = d;
    }
  }
  f.tolerance = m.number("tolerance", 0, true, 10).value_or(0.10);
  return f;
}

std::vector<Claim> read_claims(const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::BadFile&) {
    throw InputError("claims", file, "cannot read the file", "scenarios/claims/claims.yaml (or --dir DIR with one)");
  } catch (const YAML::Exception& e) {
    throw InputError("claims", e.msg, "not valid YAML", "a YAML file", fmt::format("{}:{}", file, e.mark.line + 1));
  }
  YamlMap top(root, "", file, nullptr);
  top.allow_only({"claims"});
  const YAML::Node list = root["claims"];
  if (!list.IsSequence()) top.fail("claims", "...", "not a list", "a list of claims");
  std::vector<Claim> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("claims[{}]", i);
    YamlMap m(list[i], path, file, nullptr);
    m.allow_only({"id", "section", "claim", "status", "missing", "scenarios", "figures", "why"});
    Claim c;
    c.where = location(file, list[i]);
    c.id = m.text("id").value_or("");
    if (c.id.empty()) m.fail("id", "", "missing", "S1 ... S21");
    c.section = m.text("section").value_or("");
    c.text = m.text("claim").value_or("");
    if (c.text.empty()) m.fail("claim", "", "missing", "the article's claim");
    c.status = m.text("status").value_or("evaluated");
    if (c.status != "evaluated" && c.status != "waiting" && c.status != "outside")
      m.fail("status", c.status, "unknown status", "evaluated, waiting or outside");
    c.missing = m.text("missing").value_or("");
    c.why = m.text("why").value_or("");
    c.scenarios = string_list(m, list[i], "scenarios", file);
    if (c.status == "evaluated") {
      const YAML::Node figures = list[i]["figures"];
      if (!figures.IsSequence() || figures.size() == 0) m.fail("figures", "...", "missing or empty", "a list of figures");
      for (std::size_t j = 0; j < figures.size(); ++j)
        c.figures.push_back(read_figure(figures[j], fmt::format("{}.figures[{}]", path, j), file));
      if (c.why.empty()) m.fail("why", "", "missing", "why dtsim's figures differ from the article's");
    } else if (c.missing.empty()) {
      m.fail("missing", "", "missing", "what dtsim lacks to evaluate the claim");
    }
    out.push_back(std::move(c));
  }
  return out;
}

// ---- dtsim's figures --------------------------------------------------------------------------------------

constexpr double kGB = 1e9;

// The scenario files of the claims, loaded once, and their documents' memory plans and simulated steps.
class Context {
 public:
  explicit Context(std::string dir) : dir_(std::move(dir)) {}

  const Scenario& doc(const std::string& file, const std::string& name) {
    auto& docs = file_docs(file);
    for (const auto& s : docs)
      if (s.name == name) return s;
    throw InputError("claims", fmt::format("{}/{}", dir_, file), fmt::format("has no document named {}", name),
                     "the scenario documents claims_command.cpp reads");
  }
  std::vector<Scenario>& file_docs(const std::string& file) {
    auto it = files_.find(file);
    if (it == files_.end()) it = files_.emplace(file, load_scenario_file(dir_ + "/" + file)).first;
    return it->second;
  }
  workloads::MemoryPlan memory(const std::string& file, const std::string& name) {
    const Scenario& s = doc(file, name);
    return workloads::plan_memory(*s.workload, s.cluster.gpu);
  }
  const json& run(const std::string& file, const std::string& name) {
    const std::string key = file + "#" + name;
    auto it = runs_.find(key);
    if (it == runs_.end()) it = runs_.emplace(key, run_point(doc(file, name), "")).first;
    return it->second;
  }
  double step(const std::string& file, const std::string& name) { return run(file, name).at("step_time_s").get<double>(); }

 private:
  std::string dir_;
  std::map<std::string, std::vector<Scenario>> files_;
  std::map<std::string, json> runs_;
};

double part(const workloads::MemoryPlan& p, Bytes workloads::MemoryParts::*field) { return (p.parts.*field).value(); }
double states(const workloads::MemoryPlan& p) {
  return part(p, &workloads::MemoryParts::params) + part(p, &workloads::MemoryParts::grads) +
         part(p, &workloads::MemoryParts::optimizer);
}
double params_of(const Scenario& s) { return workloads::parameter_count(s.workload->model); }

// Weights of the whole model in a serving plan (the plan's part is one GPU's share under tp).
double weights_GB(Context& cx, const std::string& file, const std::string& name) {
  const Scenario& s = cx.doc(file, name);
  return part(cx.memory(file, name), &workloads::MemoryParts::params) * s.workload->plan.tp / kGB;
}

Seconds one_collective(const std::string& gpu, const std::string& intra, double bytes) {
  CollectiveArgs a;
  a.gpu = gpu;
  a.gpus = 8;
  a.intra = intra;
  return collective_times(a, {Bytes(bytes)}).at(0);
}

Values s1(Context& cx) {
  const std::string f = "s01-70b-training-states.yaml";
  return {{"states_16B_TB", states(cx.memory(f, "s01-llama2-70b-states-16B")) / 1e12},
          {"states_18B_TB", states(cx.memory(f, "s01-llama2-70b-states-18B")) / 1e12}};
}

Values s2(Context&) {
  const auto fp16 = *topology::float_format(Precision::Fp16);
  const auto bf16 = *topology::float_format(Precision::Bf16);
  return {{"fp16_max", fp16.max_finite()},
          {"fp16_min_normal", fp16.min_normal()},
          {"bf16_max", bf16.max_finite()},
          {"bf16_min_normal", bf16.min_normal()},
          {"bf16_fp32_exponent", bf16.exponent_bits == topology::float_format(Precision::Fp32)->exponent_bits}};
}

Values s3(Context& cx) {
  const std::string f = "s03-quantisation-saving.yaml";
  const auto fp32 = cx.memory(f, "s03-llama2-7b-fp32"), int8 = cx.memory(f, "s03-llama2-7b-int8");
  return {{"weights_saving_pct", 100 * (1 - part(int8, &workloads::MemoryParts::params) / part(fp32, &workloads::MemoryParts::params))},
          {"total_saving_pct", 100 * (1 - int8.per_gpu.value() / fp32.per_gpu.value())}};
}

Values s4(Context& cx) {
  const std::string f = "s04-llama-70b-weights.yaml";
  return {{"fp32_GB", weights_GB(cx, f, "s04-llama2-70b-fp32-4xa100")},
          {"fp32_fits_4xa100", cx.memory(f, "s04-llama2-70b-fp32-4xa100").fits},
          {"bf16_GB", weights_GB(cx, f, "s04-llama2-70b-bf16-2xh100")},
          {"bf16_fits_2xh100", cx.memory(f, "s04-llama2-70b-bf16-2xh100").fits},
          {"int4_GB", weights_GB(cx, f, "s04-llama2-70b-int4-1xrtx4090")},
          {"int4_fits_1x4090", cx.memory(f, "s04-llama2-70b-int4-1xrtx4090").fits},
          {"int4_fits_2x4090", cx.memory(f, "s04-llama2-70b-int4-2xrtx4090").fits}};
}

Values s5(Context& cx) {
  const std::string f = "s05-7b-training-a100.yaml";
  const auto with = cx.memory(f, "s05-llama2-7b-a100-80gb");
  return {{"total_GB", with.per_gpu.value() / kGB},
          {"total_no_master_GB", cx.memory(f, "s05-llama2-7b-a100-80gb-no-master").per_gpu.value() / kGB},
          {"activations_GB", part(with, &workloads::MemoryParts::activations) / kGB},
          {"fits_a100_80gb", with.fits}};
}

Values s6(Context& cx) {
  const std::string f = "s06-memory-savings.yaml";
  const auto act = [&](const char* name) { return part(cx.memory(f, name), &workloads::MemoryParts::activations) / kGB; };
  const auto compute = [&](const char* name) { return cx.run(f, name).at("breakdown_s").at("compute").get<double>(); };
  // State bytes per parameter beyond the fp32 master copy (4 B), which both optimizers keep.
  const auto state_B = [&](const char* name) {
    return part(cx.memory(f, name), &workloads::MemoryParts::optimizer) / params_of(cx.doc(f, name)) - 4;
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

Values s7(Context& cx) {
  const std::string f = "s07-llama-7b-128k-kv-cache.yaml";
  const auto h200 = cx.memory(f, "s07-llama-7b-128k-bf16-h200");
  return {{"kv_GB", part(h200, &workloads::MemoryParts::kv_cache) / kGB},
          {"fits_h200", h200.fits},
          {"fits_h100", cx.memory(f, "s07-llama-7b-128k-bf16-h100").fits}};
}

Values s9(Context&) {
  workloads::InferenceSpec inf;
  inf.context = 2048;
  const auto& gpt3 = workloads::find_model("gpt3-175b");
  const double one = workloads::decode_step(gpt3, inf).intensity();
  inf.batch = 32;
  const double many = workloads::decode_step(gpt3, inf).intensity();
  const auto& h100 = topology::find_gpu("h100-sxm5-80gb", "claims");
  const double ridge = h100.peak_for(Precision::Bf16)->value() / h100.memory_bandwidth.value();
  return {{"decode_intensity_b1", one}, {"decode_intensity_b32", many}, {"ridge_h100", ridge}, {"below_ridge", one < ridge / 10}};
}

Values s10(Context& cx) {
  const json& rf = cx.run("../default.yaml", "8xa100-nvswitch").at("roofline");
  double layer = 0, elementwise = 0;
  for (const auto& k : rf.at("kernels")) {
    if (k.at("scope") != "layer") continue;
    layer += k.at("time_s").get<double>();
    if (k.at("flops").get<double>() <= 0) elementwise += k.at("time_s").get<double>();
  }
  const double share = elementwise / layer;
  return {{"elementwise_share_pct", 100 * share}, {"fusion_bound_pct", 100 * (1 / (1 - share) - 1)}};
}

Values s12(Context& cx) {
  const std::string f = "s12-h100-vs-a100-175b.yaml";
  const double a100 = cx.step(f, "s12-gpt3-175b-64xa100"), h100 = cx.step(f, "s12-gpt3-175b-64xh100");
  return {{"speedup", a100 / h100},
          {"speedup_fp8", a100 / cx.step(f, "s12-gpt3-175b-64xh100-fp8")},
          {"a100_step_s", a100},
          {"h100_step_s", h100}};
}

Values s13(Context& cx) {
  const std::string f = "s13-700b-int4-mi300x.yaml";
  return {{"weights_GB", weights_GB(cx, f, "s13-700b-int4-1xmi300x")},
          {"fits_1xmi300x", cx.memory(f, "s13-700b-int4-1xmi300x").fits},
          {"fits_2xmi300x", cx.memory(f, "s13-700b-int4-2xmi300x").fits}};
}

Values s14(Context& cx) {
  const double rtx = topology::find_gpu("rtx4090", "claims").peak_for(Precision::Fp16)->value() / 1e12;
  const double v100 = topology::find_gpu("v100-sxm2-32gb", "claims").peak_for(Precision::Fp16)->value() / 1e12;
  return {{"fits_1x4090", cx.memory("s14-70b-int4-rtx4090.yaml", "s14-llama2-70b-int4-1xrtx4090").fits},
          {"rtx4090_fp16_TFLOPS", rtx},
          {"beats_v100", rtx > v100}};
}

Values s15(Context& cx) {
  const auto eff = [&](const char* name) {
    return 100 * cx.run("../default.yaml", name).at("scaling_efficiency").get<double>();
  };
  return {{"nvswitch_pct", eff("8xa100-nvswitch")}, {"pcie_pct", eff("8xa100-pcie4-server")}, {"ethernet_pct", eff("8xa100-100gbe")}};
}

Values s16(Context& cx) {
  const json& nvs = cx.run("../default.yaml", "8xa100-nvswitch");
  const double pcie_step = cx.step("../default.yaml", "8xa100-pcie4-server");
  return {{"tp_GB", nvs.at("tp_comm_bytes").get<double>() / kGB},
          {"allreduce_2GB_nvswitch_ms", one_collective("a100-sxm4-80gb", "nvswitch", 2e9).value() * 1e3},
          {"allreduce_2GB_pcie_ms", one_collective("a100-pcie-80gb", "pcie", 2e9).value() * 1e3},
          {"pcie_slowdown_pct", 100 * (pcie_step / nvs.at("step_time_s").get<double>() - 1)}};
}

Values s17(Context& cx) {
  const std::string f = "s17-4gpu-topologies.yaml";
  const double nvs = cx.step(f, "s17-4xa100-nvswitch"), mesh = cx.step(f, "s17-4xa100-full-mesh");
  const double ring = cx.step(f, "s17-4xa100-ring"), star = cx.step(f, "s17-4xa100-star");
  return {{"nvswitch_best", nvs <= std::min({mesh, ring, star}) * 1.01},
          {"ring_between", nvs < ring && ring < star},
          {"star_worst", star > std::max({nvs, mesh, ring})},
          {"star_vs_nvswitch_pct", 100 * (star / nvs - 1)},
          {"mesh_vs_nvswitch_pct", 100 * (mesh / nvs - 1)}};
}

Values s18(Context&) {
  const double grads = workloads::parameter_count(workloads::find_model("llama2-70b")) * 2;   // bf16
  const double period = 0.010;
  const int n = 8;
  const auto& h100 = topology::find_gpu("h100-sxm5-80gb", "claims");
  const auto& nvlink = topology::find_link(h100.gpu_link, "claims");
  const double nvlink_per_gpu = nvlink.bandwidth.value() * h100.gpu_link_count;   // one direction
  const double per_gpu = 2.0 * (n - 1) / n * grads / period;
  return {{"total_TBps", grads / period / 1e12},
          {"per_gpu_TBps", per_gpu / 1e12},
          {"exceeds_nvlink4", per_gpu > nvlink_per_gpu},
          {"allreduce_ms", one_collective("h100-sxm5-80gb", "nvswitch", grads).value() * 1e3}};
}

// The smallest GPU count among a model's candidates in s19 that fits, and its step time.
Values s19(Context& cx) {
  const std::string f = "s19-sizing-guide.yaml";
  Values out;
  for (const auto& [tag, preset] : std::vector<std::pair<std::string, std::string>>{
           {"7b", "llama2-7b"}, {"13b", "llama2-13b"}, {"70b", "llama2-70b"}, {"175b", "gpt3-175b"}}) {
    const Scenario* best = nullptr;
    for (const auto& s : cx.file_docs(f))
      if (s.workload && s.workload->model.name == preset && workloads::plan_memory(*s.workload, s.cluster.gpu).fits &&
          (!best || cluster_gpus(s) < cluster_gpus(*best)))
        best = &s;
    if (!best)
      throw InputError("claims", f, fmt::format("no candidate for {} fits", preset), "at least one that fits per model");
    out["gpus_" + tag] = static_cast<double>(cluster_gpus(*best));
    out["step_" + tag + "_s"] = cx.step(f, best->name);
  }
  return out;
}

Values s21(Context& cx) {
  const std::string f = "s21-rules-of-thumb.yaml";
  // LLaMA-2-70B's cache on one GPU: the plan's share under tp 2, times 2.
  const Scenario& tp2 = cx.doc(f, "s21-serve-llama2-70b-int4-2xrtx4090");
  return {{"train_7b_GB", cx.memory(f, "s21-train-llama2-7b-h200").per_gpu.value() / kGB},
          {"serve_7b_GB", cx.memory(f, "s21-serve-llama2-7b-int4-rtx4090").per_gpu.value() / kGB},
          {"kv_70b_GB", part(cx.memory(f, tp2.name), &workloads::MemoryParts::kv_cache) * tp2.workload->plan.tp / kGB}};
}

const std::map<std::string, std::function<Values(Context&)>>& evaluators() {
  static const std::map<std::string, std::function<Values(Context&)>> m = {
      {"S1", s1},   {"S2", s2},   {"S3", s3},   {"S4", s4},   {"S5", s5},   {"S6", s6},   {"S7", s7},
      {"S9", s9},   {"S10", s10}, {"S12", s12}, {"S13", s13}, {"S14", s14}, {"S15", s15}, {"S16", s16},
      {"S17", s17}, {"S18", s18}, {"S19", s19}, {"S21", s21}};
  return m;
}

// ---- verdicts and output ----------------------------------------------------------------------------------

struct Row {
  const Figure* figure;
  Value dtsim;
  std::optional<bool> agrees;   // none: no article figure
  double difference = 0;        // relative, numbers only
};

struct Evaluated {
  const Claim* claim;
  std::vector<Row> rows;
  std::string verdict;
  std::string why;   // with dtsim's figures substituted
};

std::string show(const Value& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "yes" : "no";
  const double d = std::get<double>(v);
  if (d == std::round(d) && std::abs(d) < 1e7) return fmt::format("{:.0f}", d);
  return fmt::format("{:.4g}", d);
}

Evaluated evaluate(const Claim& c, Context& cx, const std::string& file) {
  Evaluated e{&c, {}, "", ""};
  if (c.status == "waiting") {
    e.verdict = "waiting";
    return e;
  }
  if (c.status == "outside") {
    e.verdict = "outside a simulator's reach";
    return e;
  }
  const auto it = evaluators().find(c.id);
  if (it == evaluators().end())
    throw InputError("claims", c.id, "no evaluator for this claim", "a claim dtsim computes figures for, or status: waiting",
                     c.where);
  const Values values = it->second(cx);
  for (const auto& f : c.figures) {
    const auto v = values.find(f.key);
    if (v == values.end()) {
      std::string known;
      for (const auto& [k, unused] : values) known += (known.empty() ? "" : ", ") + k;
      throw InputError(fmt::format("{}.figures.key", c.id), f.key, "not a figure dtsim computes for this claim", known, f.where);
    }
    Row r{&f, v->second, std::nullopt, 0};
    if (f.article) {
      if (f.article->index() != v->second.index())
        throw InputError(fmt::format("{}.figures.article", c.id), show(*f.article), "of the wrong kind for " + f.key,
                         std::holds_alternative<bool>(v->second) ? "true or false" : "a number", f.where);
      if (const bool* b = std::get_if<bool>(&*f.article)) {
        r.agrees = *b == std::get<bool>(v->second);
      } else {
        const double a = std::get<double>(*f.article), d = std::get<double>(v->second);
        r.difference = a != 0 ? (d - a) / std::abs(a) : d;
        r.agrees = std::abs(r.difference) <= f.tolerance + 1e-12;
      }
    }
    e.rows.push_back(r);
  }
  for (const auto& [k, unused] : values)
    if (std::none_of(c.figures.begin(), c.figures.end(), [&](const Figure& f) { return f.key == k; }))
      throw InputError(fmt::format("{}.figures", c.id), k, "computed by dtsim but not listed", "every figure dtsim computes", c.where);
  const auto judged = std::count_if(e.rows.begin(), e.rows.end(), [](const Row& r) { return r.agrees.has_value(); });
  const auto agree = std::count_if(e.rows.begin(), e.rows.end(), [](const Row& r) { return r.agrees.value_or(false); });
  e.verdict = agree == judged ? "holds" : agree == 0 ? "does not hold" : "partly holds";
  e.why = c.why;
  for (const auto& r : e.rows) {
    const std::string token = "{" + r.figure->key + "}";
    for (auto pos = e.why.find(token); pos != std::string::npos; pos = e.why.find(token))
      e.why.replace(pos, token.size(), show(r.dtsim));
  }
  if (const auto open = e.why.find('{'); open != std::string::npos && e.why.find('}', open) != std::string::npos)
    throw InputError(fmt::format("{}.why", c.id), e.why.substr(open, e.why.find('}', open) - open + 1),
                     "names no figure of this claim", "{key} of one of the claim's figures", file);
  return e;
}

std::string md(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

std::string markdown(const std::vector<Evaluated>& all, const std::string& dir) {
  std::string out =
      "# The founding article's claims, evaluated by dtsim\n\n"
      "Generated by `./dtsim claims --out docs/seed-claims.md` from `scenarios/claims/claims.yaml` and the scenarios it "
      "names; do not edit by hand. For each claim of the article (`../shared/seed/CLAIMS.md`): the article's figures, "
      "dtsim's, and a verdict computed from them. A number agrees when it is within the stated tolerance of the "
      "article's (10 % unless the figure says otherwise), a yes/no when it is the same; a claim holds when all its "
      "figures agree, partly holds when some do. Figures marked \"-\" in the article column are dtsim's own, given for "
      "context. Claims waiting for a feature dtsim lacks say what is missing; the article's claims about model "
      "accuracy, which CLAIMS.md leaves out, are listed last (A1, A2) as outside a simulator's reach.\n\n| claim | section | verdict | figures that agree |\n|---|---|---|---|\n";
  (void)dir;
  for (const auto& e : all) {
    const auto judged = std::count_if(e.rows.begin(), e.rows.end(), [](const Row& r) { return r.agrees.has_value(); });
    const auto agree = std::count_if(e.rows.begin(), e.rows.end(), [](const Row& r) { return r.agrees.value_or(false); });
    std::string anchor = e.claim->id;
    std::transform(anchor.begin(), anchor.end(), anchor.begin(), [](unsigned char ch) { return std::tolower(ch); });
    out += fmt::format("| [{0}](#{1}) | {2} | {3} | {4} |\n", e.claim->id, anchor, e.claim->section,
                       e.verdict, judged ? fmt::format("{} of {}", agree, judged) : "-");
  }
  for (const auto& e : all) {
    const Claim& c = *e.claim;
    out += fmt::format("\n## {}\n\nSection {} of the article: {}\n\n", c.id, c.section, md(c.text));
    if (c.status != "evaluated") {
      out += fmt::format("**Verdict: {}.** {}: {}\n", e.verdict, c.status == "waiting" ? "Missing" : "Why", c.missing);
      continue;
    }
    if (!c.scenarios.empty()) {
      std::string files;
      for (const auto& s : c.scenarios) {
        const std::string rel = std::filesystem::path("scenarios/claims/" + s).lexically_normal().string();
        files += fmt::format("{}`{}`", files.empty() ? "" : ", ", rel);
      }
      out += "Scenarios: " + files + "\n\n";
    }
    out += "| figure | article | dtsim | difference | verdict |\n|---|---:|---:|---:|---|\n";
    for (const auto& r : e.rows) {
      const bool number = std::holds_alternative<double>(r.dtsim);
      const std::string diff = r.agrees && number ? fmt::format("{:+.1f} %", 100 * r.difference) : "";
      out += fmt::format("| {} | {} | {} | {} | {} |\n", md(r.figure->what), r.figure->article ? show(*r.figure->article) : "-",
                         show(r.dtsim), diff, r.agrees ? (*r.agrees ? "agrees" : "differs") : "");
    }
    out += fmt::format("\n**Verdict: {}.** {}\n", e.verdict, e.why);
  }
  return out;
}

json to_json(const std::vector<Evaluated>& all) {
  json out = json::array();
  for (const auto& e : all) {
    json figures = json::array();
    for (const auto& r : e.rows) {
      const auto value = [](const Value& v) -> json {
        if (const bool* b = std::get_if<bool>(&v)) return *b;
        return std::get<double>(v);
      };
      json f = {{"key", r.figure->key}, {"what", r.figure->what}, {"dtsim", value(r.dtsim)},
                {"article", r.figure->article ? value(*r.figure->article) : json(nullptr)}};
      if (r.agrees) f["agrees"] = *r.agrees;
      figures.push_back(f);
    }
    out.push_back({{"id", e.claim->id}, {"section", e.claim->section}, {"claim", e.claim->text},
                   {"verdict", e.verdict}, {"why", e.claim->status == "evaluated" ? e.why : e.claim->missing},
                   {"figures", figures}});
  }
  return out;
}

}  // namespace

int claims_command(const std::string& dir_arg, const std::string& out, Format format, const std::vector<std::string>& only) {
  const std::string dir = dir_arg.empty() ? std::string(DTSIM_SOURCE_DIR) + "/scenarios/claims" : dir_arg;
  const std::string file = dir + "/claims.yaml";
  const auto claims = read_claims(file);
  for (const auto& id : only)
    if (std::none_of(claims.begin(), claims.end(), [&](const Claim& c) { return c.id == id; })) {
      std::string ids;
      for (const auto& c : claims) ids += (ids.empty() ? "" : ", ") + c.id;
      throw InputError("--only", id, "no such claim", ids);
    }
  Context cx(dir);
  std::vector<Evaluated> all;
  for (const auto& c : claims)
    if (only.empty() || std::find(only.begin(), only.end(), c.id) != only.end()) all.push_back(evaluate(c, cx, file));
  const std::string text = format == Format::Json ? to_json(all).dump(2) + "\n" : markdown(all, dir);
  if (out.empty()) std::cout << text;
  else write_file(out, text, "--out");
  return 0;
}

}  // namespace dtsim::cli
