// Scenario `inference` section -> workloads::InferenceSpec (section_readers.hpp): a static batch (prompt and
// output tokens) or a served request stream with its scheduler limits and prefill/decode disaggregation.
#include <algorithm>
#include <cmath>
#include <utility>
#include <fmt/format.h>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/section_readers.hpp"
#include "sim/scenario/workload_reader.hpp"
#include "topology/error.hpp"
#include "workloads/serving_scheduler.hpp"

namespace dtsim::scenario::detail {
namespace {

using topology::Precision;
using workloads::InferenceSpec;
using workloads::ModelSpec;

constexpr std::initializer_list<Precision> kServingPrecisions = {Precision::Fp32, Precision::Bf16,  Precision::Fp16,
                                                                 Precision::Fp8,  Precision::Int8,  Precision::Int4,
                                                                 Precision::Mxfp8, Precision::Fp4, Precision::Mxfp4};

// A length in tokens: a number (every request alike) or {dist: uniform, min, max} | {dist: normal|lognormal, mean,
// std} (the lengths' own mean and deviation).
workloads::LengthDistribution read_length(const YamlMap& m, const std::string& key) {
  using Kind = workloads::LengthDistribution::Kind;
  if (!m.has(key)) m.fail(key, "", "missing:", "a number of tokens, or {dist: uniform|normal|lognormal, ...}");
  if (!m.is_map(key)) return {Kind::Fixed, static_cast<double>(*m.integer(key, 1, kMaxTokens)), 0};
  const YamlMap d = m.map(key);
  const auto dist = d.text("dist");
  if (!dist) d.fail("dist", "", "missing:", "uniform, normal, lognormal");
  if (*dist == "uniform") {
    d.allow_only({"dist", "min", "max"});
    const auto lo = d.integer("min", 1, kMaxTokens), hi = d.integer("max", 1, kMaxTokens);
    if (!lo || !hi) d.fail(lo ? "max" : "min", "", "missing: a uniform length takes", "min and max, in tokens");
    if (*hi < *lo) d.fail("max", std::to_string(*hi), fmt::format("is below min {}:", *lo), "max >= min");
    return {Kind::Uniform, static_cast<double>(*lo), static_cast<double>(*hi)};
  }
  if (*dist == "normal" || *dist == "lognormal") {
    d.allow_only({"dist", "mean", "std"});
    const auto mean = d.number("mean", 1, true, static_cast<double>(kMaxTokens));
    const auto sd = d.number("std", 0, true, static_cast<double>(kMaxTokens));
    if (!mean || !sd) d.fail(mean ? "std" : "mean", "", fmt::format("missing: a {} length takes", *dist), "mean and std, in tokens");
    return {*dist == "normal" ? Kind::Normal : Kind::Lognormal, *mean, *sd};
  }
  d.fail("dist", *dist, "unknown length distribution", "uniform, normal, lognormal");
}

double mean_length(const workloads::LengthDistribution& d) {
  return d.kind == workloads::LengthDistribution::Kind::Uniform ? (d.a + d.b) / 2 : d.a;
}

// A request or a batch's sequence longer than the context (inference.context, else the model's): the one error both
// give, at `m`'s prompt_tokens.
[[noreturn]] void longer_than_context(const YamlMap& m, const std::string& prompt, const std::string& output, int context) {
  m.fail("prompt_tokens", prompt,
         fmt::format("plus the {} output tokens is longer than the model's {}-token context:", output, context),
         "prompt + output within the context (inference.context, else model.seq_length)");
}

// inference.requests: the stream; its requests hold at most `context` tokens (the model's), and their lengths'
// means must fit in it (a draw past it is cut, and counted in the results).
workloads::RequestStream read_requests(const YamlMap& m, int context) {
  m.allow_only({"prompt_tokens", "output_tokens", "rate_per_s", "duration_s", "seed"});
  workloads::RequestStream r;
  r.prompt_tokens = read_length(m, "prompt_tokens");
  r.output_tokens = read_length(m, "output_tokens");
  const auto rate = m.number("rate_per_s", 0, false, 1e6);
  if (!rate) m.fail("rate_per_s", "", "missing: the requests' mean arrival rate,", "a number of requests per second > 0");
  r.rate_per_s = *rate;
  r.duration_s = m.number("duration_s", 0, false, 1e7).value_or(r.duration_s);
  r.seed = static_cast<std::uint64_t>(m.integer("seed", 0, std::numeric_limits<long long>::max()).value_or(1));
  r.max_context = context;
  const double tokens = mean_length(r.prompt_tokens) + mean_length(r.output_tokens);
  if (tokens > context)
    longer_than_context(m, fmt::format("{:g}", mean_length(r.prompt_tokens)), fmt::format("{:g}", mean_length(r.output_tokens)),
                        context);
  if (r.duration_s * r.rate_per_s > 1e8)
    m.fail("duration_s", fmt::format("{:g}", r.duration_s), fmt::format("at {:g} requests/s draws over 1e8 requests:", r.rate_per_s),
           "rate_per_s x duration_s <= 1e8");
  return r;
}

// inference.scheduler: each key given replaces the framework's default in `l`.
workloads::SchedulerLimits read_scheduler(const YamlMap& m, workloads::SchedulerLimits l) {
  m.allow_only({"max_tokens_per_iteration", "max_sequences", "kv_blocks", "block_tokens", "chunked_prefill",
                "mixed_batches"});
  l.max_tokens_per_iteration = read_int(m, "max_tokens_per_iteration", l.max_tokens_per_iteration, 1, 10'000'000);
  if (m.has("max_sequences")) l.sequences_from_cache = false;
  l.max_sequences = read_int(m, "max_sequences", l.max_sequences, 1, 1'000'000);
  l.kv_blocks = m.integer("kv_blocks", 1, 1'000'000'000'000LL).value_or(0);
  l.block_tokens = read_int(m, "block_tokens", l.block_tokens, 1, 1'000'000);
  l.chunked_prefill = m.boolean("chunked_prefill").value_or(l.chunked_prefill);
  l.mixed_batches = m.boolean("mixed_batches").value_or(l.mixed_batches);
  return l;
}

// inference.disaggregation: two pools, each {gpus, tp (default gpus: one replica)}; tp must divide gpus.
workloads::Disaggregation read_disaggregation(const YamlMap& m) {
  m.allow_only({"prefill", "decode"});
  workloads::Disaggregation d;
  for (const char* pool : {"prefill", "decode"}) {
    if (!m.has(pool) || !m.is_map(pool)) m.fail(pool, "", "missing: disaggregation takes two pools,", "prefill and decode, each {gpus, tp}");
    const YamlMap p = m.map(pool);
    p.allow_only({"gpus", "tp"});
    const auto gpus = p.integer("gpus", 1, kMaxDegree);
    if (!gpus) p.fail("gpus", "", "missing: the pool's GPU count,", "an integer >= 1");
    workloads::ServingPool& out = std::string_view(pool) == "prefill" ? d.prefill : d.decode;
    out.gpus = static_cast<int>(*gpus);
    out.tp = read_int(p, "tp", out.gpus, 1, kMaxDegree);
    if (out.gpus % out.tp != 0)
      p.fail("tp", std::to_string(out.tp), fmt::format("does not divide the pool's {} GPUs:", out.gpus),
             "a divisor of gpus (replicas of tp GPUs)");
  }
  return d;
}

// inference.kv_offload: {host_GB, hit} (workloads/training.hpp, KvOffload): both required.
workloads::KvOffload read_kv_offload(const YamlMap& m) {
  m.allow_only({"host_GB", "hit"});
  workloads::KvOffload o;
  const auto host = m.number("host_GB", 0, false, 1e6);
  if (!host)
    m.fail("host_GB", "", "missing: the host memory the offloaded blocks may use, per replica,",
           "a number of GB above 0 (vLLM's --kv-offloading-size, in GiB there)");
  o.host_GB = *host;
  const auto hit = m.number("hit", 0, true, 1.0);
  if (!hit)
    m.fail("hit", "", "missing: the share of each prompt found in host memory beyond the GPU's prefix cache (it "
           "depends on the traffic),", "a number from 0 to 1 (vLLM's external prefix cache hit rate)");
  o.hit = *hit;
  return o;
}

// inference.speculative: {draft: PRESET | {model keys}, tokens, acceptance} (workloads/training.hpp).
workloads::SpeculativeDecoding read_speculative(const YamlMap& m, const ModelSpec& target, const std::string& file) {
  m.allow_only({"draft", "tokens", "acceptance", "tp"});
  workloads::SpeculativeDecoding s;
  if (!m.has("draft")) m.fail("draft", "", "missing: the draft model,", "a model preset or a map of model keys");
  if (m.is_map("draft")) {
    s.draft = read_model(m.map("draft"), "draft", file);
  } else {
    const auto name = m.text("draft");
    if (!name) m.fail("draft", "", "is not a name:", "a model preset or a map of model keys");
    s.draft = located(m, "draft", [&] { return workloads::find_model(*name, m.dotted("draft")); });
  }
  if (s.draft.kind != workloads::ModelKind::Transformer || s.draft.moe())
    m.fail("draft", s.draft.name, "is not a dense transformer (a draft of experts or of layers is not modelled):",
           "a dense decoder");
  if (s.draft.vocab != target.vocab)
    m.fail("draft", s.draft.name,
           fmt::format("has a {}-token vocabulary where the target's has {}: it cannot propose the target's tokens;",
                       s.draft.vocab, target.vocab),
           "a draft with the target's vocabulary (its tokenizer)");
  s.tokens = read_int(m, "tokens", s.tokens, 1, 64);
  s.tp = read_int(m, "tp", 0, 1, kMaxDegree);   // checked against the target's with the plan (check_plan)
  const auto acceptance = m.number("acceptance", 0, true, 1.0);
  if (!acceptance)
    m.fail("acceptance", "", "missing: the share of drafted tokens the target accepts (it depends on the data),",
           "a number from 0 to 1 (vLLM's draft_acceptance_rate)");
  s.acceptance = *acceptance;
  return s;
}

// What the resolved section must hold together: a draft that decodes (an output) within its own context, a
// prefix cache on a causal model (a bidirectional encoder's cached keys change with every later token).
InferenceSpec checked(const YamlMap& m, const ModelSpec& model, InferenceSpec i) {
  if (i.prefix_cache_hit > 0 && !model.causal)
    m.fail("prefix_cache_hit", fmt::format("{:g}", i.prefix_cache_hit),
           "caches a causal model's prefix; this model attends both ways:", "0 for a non-causal model");
  if (i.kv_offload && !model.causal)
    m.fail("kv_offload", "{...}", "keeps a causal model's prefixes; this model attends both ways:",
           "no kv_offload for a non-causal model");
  if (i.kv_offload && i.prefix_cache_hit + i.kv_offload->hit > 1.0 + 1e-12)
    m.map("kv_offload").fail("hit", fmt::format("{:g}", i.kv_offload->hit),
                             fmt::format("with prefix_cache_hit {:g} caches more than the whole prompt:",
                                         i.prefix_cache_hit),
                             fmt::format("at most 1 - prefix_cache_hit ({:g})", 1.0 - i.prefix_cache_hit));
  if (!i.speculative) return i;
  if (i.output_tokens == 0)
    m.fail("speculative", "{...}", "drafts output tokens, and output_tokens is 0 (prefill only):",
           "output_tokens >= 1, or no speculative");
  const ModelSpec& draft = i.speculative->draft;
  if (draft.seq_length < i.context)
    m.map("speculative").fail("draft", draft.name,
                              fmt::format("holds a {}-token context, short of the {} tokens a sequence reaches:",
                                          draft.seq_length, i.context),
                              "a draft whose seq_length holds inference.context (a map: {preset, seq_length})");
  return i;
}

}  // namespace

InferenceSpec read_inference(const YamlMap& m, const ModelSpec& model, const topology::GpuSpec& gpu,
                             const std::string& file) {
  m.allow_only({"batch", "context", "weights", "kv_cache", "prompt_tokens", "output_tokens", "requests", "scheduler",
                "disaggregation", "prefix_cache_hit", "kv_offload", "speculative", "framework"});
  InferenceSpec i;
  i.framework = read_enum(m, "framework", i.framework, workloads::parse_serving_framework,
                          workloads::kServingFrameworkNames);
  if (m.has("kv_offload")) {
    if (!m.is_map("kv_offload"))
      m.fail("kv_offload", m.text("kv_offload").value_or(""), "is not a map:", "{host_GB, hit}");
    i.kv_offload = read_kv_offload(m.map("kv_offload"));
  }
  if (m.has("speculative")) {
    if (!m.is_map("speculative"))
      m.fail("speculative", m.text("speculative").value_or(""), "is not a map:", "{draft, tokens, acceptance}");
    i.speculative = read_speculative(m.map("speculative"), model, file);
    if (m.has("disaggregation"))
      m.fail("speculative", "{...}", "is modelled where prefill and decode share the GPUs, not beside",
             "inference.disaggregation or inference.speculative, not both");
  }
  i.scheduler = workloads::framework_scheduler(i.framework, gpu, model, i.speculative.has_value());
  // The share of each prompt a prefix cache holds (workloads/training.hpp); 1 still computes the last token.
  i.prefix_cache_hit = m.number("prefix_cache_hit", 0, true, 1.0).value_or(0.0);
  for (const char* key : {"scheduler", "disaggregation"})
    if (m.has(key) && !m.has("requests"))
      m.fail(key, "{...}", "serves a request stream, and there is none:", fmt::format("inference.requests with it, or no {}", key));
  if (m.has("requests")) {
    // A served stream: the static batch times one request alone, of the stream's mean lengths (unless given).
    const auto given = m.integer("context", 1, kMaxTokens);
    const int context = static_cast<int>(given.value_or(model.seq_length));
    if (context < 2)
      m.fail("context", std::to_string(context), "leaves a request no room for a prompt and an output token:",
             "a context of at least 2 tokens");
    i.requests = read_requests(m.map("requests"), context);
    if (m.has("scheduler")) {
      i.scheduler = read_scheduler(m.map("scheduler"), i.scheduler);
      // SGLang without chunking takes a prefill batch up to max_prefill_tokens, 16,384 (server_args.py, v0.5.6.post2).
      if (i.framework == workloads::ServingFramework::Sglang && !i.scheduler.chunked_prefill &&
          !m.map("scheduler").has("max_tokens_per_iteration"))
        i.scheduler.max_tokens_per_iteration = 16384;
    }
    if (i.speculative && i.scheduler.max_tokens_per_iteration < i.speculative->tokens + 1)
      m.map("scheduler").fail("max_tokens_per_iteration", std::to_string(i.scheduler.max_tokens_per_iteration),
                              fmt::format("cannot hold one decoding sequence's {} drafted tokens and its own:",
                                          i.speculative->tokens),
                              "at least inference.speculative.tokens + 1");
    if (m.has("disaggregation")) i.disaggregation = read_disaggregation(m.map("disaggregation"));
    if (!m.has("prompt_tokens") && !m.has("output_tokens")) {
      const int prompt = std::clamp(static_cast<int>(std::lround(mean_length(i.requests->prompt_tokens))), 1, context - 1);
      i.prompt_tokens = prompt;
      i.output_tokens = std::clamp(static_cast<int>(std::lround(mean_length(i.requests->output_tokens))), 1, context - prompt);
      i.context = context;
      i.batch = read_int(m, "batch", i.batch, 1, kMaxSequences);
      i.weights = read_precision(m, "weights", i.weights, kServingPrecisions);
      i.kv_cache = read_precision(m, "kv_cache", i.kv_cache, kServingPrecisions);
      return checked(m, model, std::move(i));
    }
  }
  i.batch = read_int(m, "batch", i.batch, 1, kMaxSequences);
  // A static batch: prompt_tokens prefilled, then output_tokens decoded (0: prefill only, an encoder's serving).
  // The KV cache holds context tokens, their sum unless given; one given with context sets the other; neither:
  // the last min(128, context / 2) tokens of the context are the output.
  const auto context = m.integer("context", 1, kMaxTokens);
  const auto prompt = m.integer("prompt_tokens", 1, kMaxTokens);
  const auto output = m.integer("output_tokens", 0, kMaxTokens);
  // With a stream, the context is the stream's (given, else the model's): the static batch must fit in it, and the
  // resolved scenario writes it back for both.
  const bool stream = i.requests.has_value();
  // One rule for a batch and a stream: a sequence holds at most the model's context (model.seq_length) unless
  // inference.context is written, which serves a longer one (a model extended by RoPE scaling, say) as the user
  // says it can.
  if (!context && prompt && output && *prompt + *output > model.seq_length)
    longer_than_context(m, std::to_string(*prompt), std::to_string(*output), model.seq_length);
  i.context = static_cast<int>(context.value_or(prompt && output && !stream ? *prompt + *output : model.seq_length));
  if (prompt && output) {
    if (*prompt + *output > i.context)
      m.fail("context", std::to_string(i.context),
             fmt::format("{} + {} tokens (prompt_tokens + output_tokens) do not fit in a context of", *prompt, *output),
             "at least their sum (or leave context out when they fit in model.seq_length)");
    i.prompt_tokens = static_cast<int>(*prompt);
    i.output_tokens = static_cast<int>(*output);
  } else if (prompt) {
    if (*prompt > i.context)
      m.fail("prompt_tokens", std::to_string(*prompt), fmt::format("does not fit in the {}-token context:", i.context),
             "at most context");
    i.prompt_tokens = static_cast<int>(*prompt);
    i.output_tokens = i.context - i.prompt_tokens;
  } else if (output) {
    if (*output >= i.context)
      m.fail("output_tokens", std::to_string(*output), fmt::format("fills the whole {}-token context, leaving no prompt:", i.context),
             "less than context");
    i.output_tokens = static_cast<int>(*output);
    i.prompt_tokens = i.context - i.output_tokens;
  } else {
    i.output_tokens = std::min(128, i.context / 2);
    i.prompt_tokens = i.context - i.output_tokens;
  }
  i.weights = read_precision(m, "weights", i.weights, kServingPrecisions);
  i.kv_cache = read_precision(m, "kv_cache", i.kv_cache, kServingPrecisions);
  return checked(m, model, std::move(i));
}

}  // namespace dtsim::scenario::detail
