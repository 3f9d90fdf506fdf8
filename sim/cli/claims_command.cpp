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
#include <fmt/ranges.h>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <variant>
#include <yaml-cpp/yaml.h>

#include <regex>
#include <set>

#include "sim/drivers/claims.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/scenario/yaml_reader.hpp"

#ifndef DTSIM_SOURCE_DIR
#error "DTSIM_SOURCE_DIR must name the source tree (the default claims directory)"
#endif

namespace dtsim::cli {
namespace {

using nlohmann::json;
using Value = drivers::ClaimValue;

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
  std::string part;                   // the part of the claim the figures speak to, when not all of it
  std::vector<std::string> scenarios;
  std::vector<Figure> figures;
  std::string why;
  std::string where;
};

// ---- claims.yaml ------------------------------------------------------------------------------------------

std::vector<std::string> string_list(const scenario::YamlMap& m, const YAML::Node& node, const std::string& key,
                                     const std::string& file) {
  std::vector<std::string> out;
  const YAML::Node list = node[key];
  if (!list.IsDefined() || list.IsNull()) return out;
  if (!list.IsSequence()) m.fail(key, "...", "not a list", "a list of file names");
  for (const auto& item : list) {
    if (!item.IsScalar()) throw InputError(m.dotted(key), "...", "not a file name", "a list of file names", scenario::location(file, item));
    out.push_back(item.Scalar());
  }
  return out;
}

Figure read_figure(const YAML::Node& node, const std::string& path, const std::string& file) {
  scenario::YamlMap m(node, path, file, nullptr);
  m.allow_only({"key", "what", "article", "tolerance"});
  Figure f;
  f.where = scenario::location(file, node);
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

std::vector<Claim> read_claims(const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::BadFile&) {
    throw InputError("claims", file, "cannot read the file", "scenarios/claims/claims.yaml (or --dir DIR with one)");
  } catch (const YAML::Exception& e) {
    throw InputError("claims", e.msg, "not valid YAML", "a YAML file", fmt::format("{}:{}", file, e.mark.line + 1));
  }
  scenario::YamlMap top(root, "", file, nullptr);
  top.allow_only({"claims"});
  const YAML::Node list = root["claims"];
  if (!list.IsSequence()) top.fail("claims", "...", "not a list", "a list of claims");
  std::vector<Claim> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("claims[{}]", i);
    scenario::YamlMap m(list[i], path, file, nullptr);
    m.allow_only({"id", "section", "claim", "status", "missing", "part", "scenarios", "figures", "why"});
    Claim c;
    c.where = scenario::location(file, list[i]);
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
      if (std::none_of(c.figures.begin(), c.figures.end(), [](const Figure& f) { return f.article.has_value(); }))
        m.fail("figures", "...", "no figure with the article's value, so no verdict", "at least one article figure");
    } else if (c.missing.empty()) {
      m.fail("missing", "", "missing", "what dtsim lacks to evaluate the claim");
    }
    out.push_back(std::move(c));
  }
  return out;
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

Evaluated evaluate(const Claim& c, drivers::ClaimContext& cx, const std::string& file) {
  Evaluated e{&c, {}, "", ""};
  if (c.status == "waiting") {
    e.verdict = "waiting";
    return e;
  }
  if (c.status == "outside") {
    e.verdict = "outside a simulator's reach";
    return e;
  }
  const auto it = drivers::claim_evaluators().find(c.id);
  if (it == drivers::claim_evaluators().end())
    throw InputError("claims", c.id, "no evaluator for this claim", "a claim dtsim computes figures for, or status: waiting",
                     c.where);
  cx.begin_claim();
  const drivers::ClaimValues values = it->second(cx);
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
  for (const auto& value : values)   // not a structured binding: clang 14 cannot capture one in the lambda
    if (const auto& k = value.first;
        std::none_of(c.figures.begin(), c.figures.end(), [&](const Figure& f) { return f.key == k; }))
      throw InputError(fmt::format("{}.figures", c.id), k, "computed by dtsim but not listed", "every figure dtsim computes", c.where);
  const auto judged = std::count_if(e.rows.begin(), e.rows.end(), [](const Row& r) { return r.agrees.has_value(); });
  const auto agree = std::count_if(e.rows.begin(), e.rows.end(), [](const Row& r) { return r.agrees.value_or(false); });
  e.verdict = agree == judged ? "holds" : agree == 0 ? "does not hold" : "partly holds";
  if (!c.part.empty()) e.verdict += " for " + c.part;
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

std::string markdown(const std::vector<Evaluated>& all) {
  std::string out =
      "# The founding article's claims, evaluated by dtsim\n\n"
      "Generated by `./dtsim claims --out docs/seed-claims.md` from `scenarios/claims/claims.yaml` and the scenarios it "
      "names; do not edit by hand. For each claim of the article (`../shared/seed/CLAIMS.md`): the article's figures, "
      "dtsim's, and a verdict computed from them. A number agrees when it is within the stated tolerance of the "
      "article's (10 % unless the figure says otherwise), a yes/no when it is the same; a claim holds when all its "
      "figures agree, partly holds when some do; \"for the ... half\" says what part of the claim the figures cover. Figures marked \"-\" in the article column are dtsim's own, given for "
      "context. Claims waiting for a feature dtsim lacks say what is missing; the article's claims about model "
      "accuracy, which CLAIMS.md leaves out, are listed last (A1, A2) as outside a simulator's reach.\n\n| claim | section | verdict | figures that agree |\n|---|---|---|---|\n";
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
        const std::string rel = s == "default" ? "scenarios/default.yaml (the default scenario)" : "scenarios/claims/" + s;
        files += fmt::format("{}`{}`", files.empty() ? "" : ", ", rel);
      }
      out += "Scenarios: " + files + "\n\n";
    }
    out += "| figure | article | dtsim | difference | tolerance | verdict |\n|---|---:|---:|---:|---:|---|\n";
    for (const auto& r : e.rows) {
      const bool number = std::holds_alternative<double>(r.dtsim);
      const std::string diff = r.agrees && number ? fmt::format("{:+.1f} %", 100 * r.difference) : "";
      const std::string tolerance = r.agrees && number ? fmt::format("±{:g} %", 100 * r.figure->tolerance) : "";
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", md(r.figure->what),
                         r.figure->article ? show(*r.figure->article) : "-", show(r.dtsim), diff, tolerance,
                         r.agrees ? (*r.agrees ? "agrees" : "differs") : "");
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

int claims_command(const std::string& dir_arg, const std::string& out, Format format, const std::vector<std::string>& only,
                   const std::string& json_out) {
  const std::string dir = dir_arg.empty() ? std::string(DTSIM_SOURCE_DIR) + "/scenarios/claims" : dir_arg;
  const std::string file = dir + "/claims.yaml";
  const auto claims = read_claims(file);
  for (const auto& id : only)
    if (std::none_of(claims.begin(), claims.end(), [&](const Claim& c) { return c.id == id; })) {
      std::string ids;
      for (const auto& c : claims) ids += (ids.empty() ? "" : ", ") + c.id;
      throw InputError("--only", id, "no such claim", ids);
    }
  drivers::ClaimContext cx(dir);
  std::vector<Evaluated> all;
  for (const auto& c : claims)
    if (only.empty() || std::find(only.begin(), only.end(), c.id) != only.end()) all.push_back(evaluate(c, cx, file));
  const std::string text = format == Format::Json ? to_json(all).dump(2) + "\n" : markdown(all);
  if (!json_out.empty()) results::write_file(json_out, to_json(all).dump(2) + "\n", "--json");
  if (out.empty()) std::cout << text;
  else results::write_file(out, text, "--out");
  return 0;
}

}  // namespace dtsim::cli
