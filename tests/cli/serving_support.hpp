// What the serving CLI tests share: a scenario file per case, the Llama-2-70B batch on 8 H100, a run's JSON, and a
// request stream of Llama-2-7B on H100.
#pragma once

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"

namespace serving_support {

using namespace cli_support;
using nlohmann::json;

// A scenario file holding `yaml`, in a fresh directory for `tag`.
inline fs::path scenario(const std::string& tag, const std::string& yaml) {
  const fs::path dir = fresh_dir("serving", tag);
  fs::create_directories(dir);
  std::ofstream(dir / "s.yaml") << yaml;
  return dir / "s.yaml";
}

inline const std::string kLlama70b = R"(name: llama70b
cluster: {gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: 8, intra: nvswitch}
model: {preset: llama2-70b}
inference: {batch: 32, prompt_tokens: 1024, output_tokens: 256}
parallelism: {tp: 8}
)";

inline json serving_run_json(const fs::path& file, const std::string& extra = "") {
  const Result r = dtsim("run " + file.string() + " --format json " + extra);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  return json::parse(r.out);
}

// Llama-2-7B on one H100 serving a stream of `rate` requests/s for `duration` s, prompts and outputs fixed.
inline std::string stream_of(double rate, double duration, const std::string& extra = "") {
  return fmt::format(R"(name: stream
cluster: {{gpu: h100-sxm5-80gb, nodes: 1, gpus_per_node: {}, intra: nvswitch}}
model: {{preset: llama2-7b}}
inference:
  requests: {{prompt_tokens: 512, output_tokens: 64, rate_per_s: {}, duration_s: {}, seed: 3}}
{})",
                     extra.find("dp: 2") != std::string::npos ? 2 : 1, rate, duration, extra);
}

}  // namespace serving_support
