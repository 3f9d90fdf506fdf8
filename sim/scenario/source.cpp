// Where a scenario comes from (a file, text, or the embedded default) and the --set overrides on it.
#include <fmt/format.h>

#include "sim/scenario/scenario.hpp"
#include "topology/error.hpp"

namespace dtsim::scenario {

Override parse_set(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set", text, "malformed override", "key=value, e.g. cluster.intra=ring", "--set");
  return Override{text.substr(0, eq), text.substr(eq + 1)};
}

std::vector<Override> parse_sets(const std::vector<std::string>& texts) {
  std::vector<Override> out;
  for (const auto& t : texts) out.push_back(parse_set(t));
  return out;
}

std::vector<Scenario> load(const Source& source, bool keep_invalid_points) {
  const auto overrides = parse_sets(source.sets);
  if (source.text) return load_scenarios(*source.text, "<dict>", overrides, keep_invalid_points);
  if (source.file.empty())
    return load_scenarios(default_scenario_text(), "<default scenario>", overrides, keep_invalid_points);
  return load_scenario_file(source.file, overrides, keep_invalid_points);
}

}  // namespace dtsim::scenario
