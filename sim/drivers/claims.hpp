// The founding article's claims as `dtsim claims` evaluates them: what dtsim computes for each claim (one
// evaluator per claim id, claims_evaluators.cpp), from the claim scenarios it loads through a ClaimContext. The
// article's figures, tolerances and explanations are data (scenarios/claims/claims.yaml, read by sim/scenario/claims_reader).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "results/claims_report.hpp"
#include "sim/scenario/claims_reader.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/memory_plan.hpp"

namespace dtsim::drivers {

using ClaimValue = results::ClaimValue;
using ClaimValues = std::map<std::string, ClaimValue>;

// The claim scenarios, loaded once, with their documents' memory plans and simulated steps. `file` is a name in
// the claims directory, or "default" for the embedded default scenario (scenarios/default.yaml). Records which
// files each claim read, so the data's `scenarios:` list can be checked against them.
class ClaimContext {
 public:
  explicit ClaimContext(std::string dir) : dir_(std::move(dir)) {}

  const scenario::Scenario& doc(const std::string& file, const std::string& name);
  std::vector<scenario::Scenario>& docs(const std::string& file);
  workloads::MemoryPlan memory(const std::string& file, const std::string& name);
  const nlohmann::json& run(const std::string& file, const std::string& name);   // run_point's row
  double step(const std::string& file, const std::string& name);

  void begin_claim() { read_.clear(); }
  [[nodiscard]] const std::set<std::string>& files_read() const { return read_; }

 private:
  std::string dir_;
  std::map<std::string, std::vector<scenario::Scenario>> files_;
  std::map<std::string, nlohmann::json> runs_;
  std::set<std::string> read_;
};

using ClaimEvaluator = std::function<ClaimValues(ClaimContext&)>;
// By claim id ("S1" ... "S21"): the claims dtsim computes figures for.
const std::map<std::string, ClaimEvaluator>& claim_evaluators();

// The claims of DIR/claims.yaml (those of `only`, when given), each evaluated from the claim scenarios in DIR: its
// figures beside the article's and its verdict. A key the data names and no evaluator computes (or the reverse),
// a scenario list that is not what the evaluator read, an unknown id in `only`: one-line InputErrors.
std::vector<results::EvaluatedClaim> claims(const std::string& dir, const std::vector<std::string>& only = {});

}  // namespace dtsim::drivers
