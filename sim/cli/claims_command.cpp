// `dtsim claims`: every claim of the founding article (scenarios/claims/claims.yaml) with the article's figures
// beside dtsim's and a verdict computed from the numbers (drivers::claims); as the markdown of
// docs/seed-claims.md or as JSON (results/claims_report).
#include <iostream>

#include "results/claims_report.hpp"
#include "results/files.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/drivers/claims.hpp"

#ifndef DTSIM_SOURCE_DIR
#error "DTSIM_SOURCE_DIR must name the source tree (the default claims directory)"
#endif

namespace dtsim::cli {

int claims_command(const std::string& dir_arg, const std::string& out, Format format, const std::vector<std::string>& only,
                   const std::string& json_out) {
  const std::string dir = dir_arg.empty() ? std::string(DTSIM_SOURCE_DIR) + "/scenarios/claims" : dir_arg;
  const auto all = drivers::claims(dir, only);
  const std::string text = format == Format::Json ? results::claims_json(all).dump(2) + "\n" : results::claims_markdown(all);
  if (!json_out.empty()) results::write_file(json_out, results::claims_json(all).dump(2) + "\n", "--json");
  if (out.empty()) std::cout << text;
  else results::write_file(out, text, "--out");
  return 0;
}

}  // namespace dtsim::cli
