// The claims' verdicts (claims.hpp): each figure dtsim computes beside the article's, and the claim's verdict.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "sim/drivers/claims.hpp"
#include "topology/error.hpp"

namespace dtsim::drivers {
namespace {

results::EvaluatedClaim evaluate(const scenario::Claim& c, ClaimContext& cx, const std::string& file) {
  results::EvaluatedClaim e{c, {}, "", ""};
  if (c.status == "waiting") {
    e.verdict = "waiting";
    return e;
  }
  if (c.status == "outside") {
    e.verdict = "outside a simulator's reach";
    return e;
  }
  const auto it = claim_evaluators().find(c.id);
  if (it == claim_evaluators().end())
    throw InputError("claims", c.id, "no evaluator for this claim", "a claim dtsim computes figures for, or status: waiting",
                     c.where);
  cx.begin_claim();
  const ClaimValues values = it->second(cx);
  const std::set<std::string> listed(c.scenarios.begin(), c.scenarios.end());
  if (listed != cx.files_read())
    throw InputError(fmt::format("{}.scenarios", c.id), fmt::format("[{}]", fmt::join(c.scenarios, ", ")),
                     "not the files dtsim reads for this claim", fmt::format("[{}]", fmt::join(cx.files_read(), ", ")),
                     c.where);
  for (const auto& f : c.figures) {
    const auto v = values.find(f.key);
    if (v == values.end()) {
      std::string known;
      for (const auto& [k, unused] : values) known += (known.empty() ? "" : ", ") + k;
      throw InputError(fmt::format("{}.figures.key", c.id), f.key, "not a figure dtsim computes for this claim", known, f.where);
    }
    results::ClaimRow r{f, v->second, std::nullopt, 0};
    if (f.article) {
      if (f.article->index() != v->second.index())
        throw InputError(fmt::format("{}.figures.article", c.id), results::show_value(*f.article), "of the wrong kind for " + f.key,
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
  for (const auto& value : values)   // not a structured binding: clang 14 cannot capture one in the lambda
    if (const auto& k = value.first;
        std::none_of(c.figures.begin(), c.figures.end(), [&](const scenario::ClaimFigure& f) { return f.key == k; }))
      throw InputError(fmt::format("{}.figures", c.id), k, "computed by dtsim but not listed", "every figure dtsim computes", c.where);
  const auto judged = std::count_if(e.rows.begin(), e.rows.end(), [](const results::ClaimRow& r) { return r.agrees.has_value(); });
  const auto agree = std::count_if(e.rows.begin(), e.rows.end(), [](const results::ClaimRow& r) { return r.agrees.value_or(false); });
  e.verdict = agree == judged ? "holds" : agree == 0 ? "does not hold" : "partly holds";
  if (!c.part.empty()) e.verdict += " for " + c.part;
  e.why = c.why;
  for (const auto& r : e.rows) {
    const std::string token = "{" + r.figure.key + "}";
    for (auto pos = e.why.find(token); pos != std::string::npos; pos = e.why.find(token))
      e.why.replace(pos, token.size(), results::show_value(r.dtsim));
  }
  if (const auto open = e.why.find('{'); open != std::string::npos && e.why.find('}', open) != std::string::npos)
    throw InputError(fmt::format("{}.why", c.id), e.why.substr(open, e.why.find('}', open) - open + 1),
                     "names no figure of this claim", "{key} of one of the claim's figures", file);
  return e;
}

}  // namespace

std::vector<results::EvaluatedClaim> claims(const std::string& dir, const std::vector<std::string>& only) {
  const std::string file = dir + "/claims.yaml";
  const auto all = scenario::read_claims(file);
  for (const auto& id : only)
    if (std::none_of(all.begin(), all.end(), [&](const scenario::Claim& c) { return c.id == id; })) {
      std::string ids;
      for (const auto& c : all) ids += (ids.empty() ? "" : ", ") + c.id;
      throw InputError("--only", id, "no such claim", ids);
    }
  ClaimContext cx(dir);
  std::vector<results::EvaluatedClaim> out;
  for (const auto& c : all)
    if (only.empty() || std::find(only.begin(), only.end(), c.id) != only.end()) out.push_back(evaluate(c, cx, file));
  return out;
}

}  // namespace dtsim::drivers
