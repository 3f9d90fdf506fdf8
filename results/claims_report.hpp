// The founding article's claims evaluated (`dtsim claims`): each claim as claims.yaml gives it, each figure dtsim
// computes beside the article's with the difference and whether it agrees, the claim's verdict; as the markdown of
// docs/seed-claims.md or as JSON. The data is read by sim/scenario/claims_reader, evaluated by sim/drivers/claims.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dtsim::results {

using ClaimValue = std::variant<double, bool>;

struct ClaimFigure {
  std::string key;
  std::string what;
  std::optional<ClaimValue> article;   // none: a figure only dtsim gives
  double tolerance = 0.10;
  std::string where;                   // file:line, for errors
};

struct Claim {
  std::string id;
  std::string section;
  std::string text;
  std::string status = "evaluated";   // evaluated | waiting | outside
  std::string missing;
  std::string part;                   // the part of the claim the figures speak to, when not all of it
  std::vector<std::string> scenarios;
  std::vector<ClaimFigure> figures;
  std::string why;
  std::string where;
};

struct ClaimRow {
  ClaimFigure figure;
  ClaimValue dtsim;
  std::optional<bool> agrees;   // none: no article figure
  double difference = 0;        // relative, numbers only
};

struct EvaluatedClaim {
  Claim claim;
  std::vector<ClaimRow> rows;
  std::string verdict;
  std::string why;   // with dtsim's figures substituted
};

// A figure as the page prints it: yes/no, a whole number, or four significant digits.
std::string show_value(const ClaimValue& v);
// docs/seed-claims.md: the summary table, then each claim with its figures and verdict.
std::string claims_markdown(const std::vector<EvaluatedClaim>& all);
// [{"id", "section", "claim", "verdict", "why", "figures": [{"key", "what", "dtsim", "article", "agrees"}]}]
nlohmann::json claims_json(const std::vector<EvaluatedClaim>& all);

}  // namespace dtsim::results
