// claims.yaml read into the claims' structs (claims_reader.hpp).
#include "sim/scenario/claims_reader.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <regex>

#include "sim/scenario/yaml_reader.hpp"
#include "topology/error.hpp"

namespace dtsim::scenario {
namespace {

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

ClaimFigure read_figure(const YAML::Node& node, const std::string& path, const std::string& file) {
  YamlMap m(node, path, file, nullptr);
  m.allow_only({"key", "what", "article", "tolerance"});
  ClaimFigure f;
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
      static const std::regex decimal(R"([-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)");
      if (!std::regex_match(v, decimal)) m.fail("article", v, "not a number", "a decimal number, true, false or null");
      f.article = std::stod(v);
    }
  }
  f.tolerance = m.number("tolerance", 0, true, 10).value_or(0.10);
  return f;
}

}  // namespace

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
    m.allow_only({"id", "section", "claim", "status", "missing", "part", "scenarios", "figures", "why"});
    Claim c;
    c.where = location(file, list[i]);
    c.id = m.text("id").value_or("");
    if (c.id.empty()) m.fail("id", "", "missing", "S1 ... S21");
    if (std::any_of(out.begin(), out.end(), [&](const Claim& o) { return o.id == c.id; }))
      m.fail("id", c.id, "a second claim with this id", "each id once");
    c.section = m.text("section").value_or("");
    c.text = m.text("claim").value_or("");
    if (c.text.empty()) m.fail("claim", "", "missing", "the article's claim");
    c.status = m.text("status").value_or("evaluated");
    if (c.status != "evaluated" && c.status != "waiting" && c.status != "outside")
      m.fail("status", c.status, "unknown status", "evaluated, waiting or outside");
    c.missing = m.text("missing").value_or("");
    c.part = m.text("part").value_or("");
    c.why = m.text("why").value_or("");
    c.scenarios = string_list(m, list[i], "scenarios", file);
    if (c.status == "evaluated") {
      const YAML::Node figures = list[i]["figures"];
      if (!figures.IsSequence() || figures.size() == 0) m.fail("figures", "...", "missing or empty", "a list of figures");
      for (std::size_t j = 0; j < figures.size(); ++j)
        c.figures.push_back(read_figure(figures[j], fmt::format("{}.figures[{}]", path, j), file));
      if (c.why.empty()) m.fail("why", "", "missing", "why dtsim's figures differ from the article's");
      if (std::none_of(c.figures.begin(), c.figures.end(), [](const ClaimFigure& f) { return f.article.has_value(); }))
        m.fail("figures", "...", "no figure with the article's value, so no verdict", "at least one article figure");
    } else if (c.missing.empty()) {
      m.fail("missing", "", "missing", "what dtsim lacks to evaluate the claim");
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace dtsim::scenario
