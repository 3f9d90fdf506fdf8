#include "sim/scenario/yaml_reader.hpp"

#include <filesystem>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <set>
#include <sstream>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/depthguard.h>

#include "topology/error.hpp"

namespace dtsim::scenario {

std::string location(const std::string& file, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return file;
  return fmt::format("{}:{}", file, mark.line + 1);
}

namespace {

// A scalar as yaml-cpp decoded it must still be UTF-8: the text is (parse_yaml checks it first), but yaml-cpp 0.7
// decodes the escapes "\_" and "\N" (U+00A0, U+0085) to the single bytes 0xA0 and 0x85, which the JSON results
// cannot hold. The step fuzz target found it.
void check_scalar(const YAML::Node& node, const std::string& file) {
  const std::string& text = node.Scalar();
  const std::size_t at = first_non_utf8(text);
  if (at == text.size()) return;
  throw InputError("(yaml)", fmt::format("0x{:02X}", static_cast<unsigned char>(text[at])),
                   "a value that is not UTF-8 once its escapes are decoded: byte",
                   "UTF-8 text (yaml-cpp decodes the escapes \\_ and \\N to bytes that are not)", location(file, node));
}

// Every node of `doc`, walked with an explicit stack (the parser has bounded the depth already): each map's keys
// single values and distinct, each scalar and key UTF-8.
void check_keys(const YAML::Node& doc, const std::string& file) {
  std::vector<YAML::Node> todo{doc};
  while (!todo.empty()) {
    const YAML::Node node = todo.back();
    todo.pop_back();
    if (node.IsScalar()) check_scalar(node, file);
    if (node.IsSequence()) {
      for (const auto& item : node) todo.push_back(item);
    } else if (node.IsMap()) {
      std::set<std::string> seen;
      for (const auto& kv : node) {
        if (!kv.first.IsScalar())
          throw InputError("(yaml)", kv.first.IsSequence() ? "[...]" : "{...}", "a map key that is not a single value:",
                           "keys that are plain words or numbers", location(file, kv.first));
        check_scalar(kv.first, file);
        if (!seen.insert(kv.first.Scalar()).second)
          throw InputError("(yaml)", kv.first.Scalar(), "duplicate key", "each key once in a map", location(file, kv.first));
        todo.push_back(kv.second);
      }
    }
  }
}

// yaml-cpp 0.7 loops for ever, allocating, on a token it cannot place at a document's top level: LoadAll asks
// for the next document, the parser leaves the token where it is and reports an empty document, again and again.
// The scenario fuzz target found it with a ',' outside [ ] or { } ("- 1\n,", "!a, b", "\"x\","), which YAML
// does not allow there. A first pass over the parser's events sees a document start where the last one did and
// refuses the text at that point before LoadAll runs.
class NoProgress : public YAML::EventHandler {
 public:
  NoProgress(const std::string& text, const std::string& file) : text_(text), file_(file) {}
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (started_ && mark.pos == last_.pos) {
      const std::size_t at = static_cast<std::size_t>(std::max(0, mark.pos));
      throw InputError("(yaml)", at < text_.size() ? std::string(1, text_[at]) : std::string(),
                       "syntax error: the parser stops at", "valid YAML; ',' only inside [ ] or { }",
                       fmt::format("{}:{}", file_, mark.line + 1));
    }
    started_ = true;
    last_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  const std::string& text_;
  const std::string& file_;
  bool started_ = false;
  YAML::Mark last_;
};

void check_progress(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  NoProgress probe(text, file);
  while (parser.HandleNextDocument(probe)) {
  }
}

}  // namespace

std::vector<YAML::Node> parse_yaml(const std::string& text, const std::string& file) {
  require_utf8(text, file);
  std::vector<YAML::Node> docs;
  try {
    check_progress(text, file);
    docs = YAML::LoadAll(text);
  } catch (const YAML::DeepRecursion& e) {
    throw InputError("(yaml)", "", "nested too deeply", fmt::format("fewer than {} levels of lists and maps", e.depth()),
                     fmt::format("{}:{}", file, e.mark.line + 1));
  } catch (const YAML::ParserException& e) {
    throw InputError("(yaml)", e.msg, "syntax error:", "valid YAML", fmt::format("{}:{}", file, e.mark.line + 1));
  }
  for (const auto& doc : docs) check_keys(doc, file);
  return docs;
}

YamlMap::YamlMap(YAML::Node node, std::string path, std::string file, std::map<std::string, std::string>* origins,
                 const std::vector<std::pair<std::string, std::string>>* overridden)
    : node_(std::move(node)), path_(std::move(path)), file_(std::move(file)), origins_(origins), overridden_(overridden) {
  if (!node_.IsMap())
    throw InputError(path_.empty() ? "(top level)" : path_, node_.IsScalar() ? node_.Scalar() : "...",
                     "expected a map of keys, got", "key: value pairs", locate(path_, node_));
}

std::string YamlMap::locate(const std::string& dotted_key, const YAML::Node& node) const {
  if (overridden_)
    for (const auto& [key, where] : *overridden_)
      if (dotted_key == key || dotted_key.starts_with(key + ".")) return where;
  return location(file_, node);
}

std::string YamlMap::dotted(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

std::string YamlMap::where(const std::string& key) const {
  YAML::Node v = node_[key];
  return v.IsDefined() ? locate(dotted(key), v) : locate(path_, node_);
}

void YamlMap::fail(const std::string& key, const std::string& value, const std::string& reason,
                   const std::string& allowed) const {
  throw InputError(dotted(key), value, reason, allowed, where(key));
}

void YamlMap::fail_here(const std::string& value, const std::string& reason, const std::string& allowed) const {
  throw InputError(path_, value, reason, allowed, locate(path_, node_));
}

std::vector<std::string> YamlMap::keys() const {
  std::vector<std::string> out;
  for (const auto& kv : node_) out.push_back(kv.first.as<std::string>());
  return out;
}

void YamlMap::allow_only(std::initializer_list<std::string_view> allowed) const {
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw InputError(dotted(key), key, "unknown key", list, locate(dotted(key), kv.first));
  }
}

bool YamlMap::has(const std::string& key) const { return node_[key].IsDefined(); }

YAML::Node YamlMap::scalar(const std::string& key) const {
  YAML::Node v = node_[key];
  if (!v.IsDefined()) return v;
  if (origins_) (*origins_)[dotted(key)] = locate(dotted(key), v);
  if (v.IsNull()) fail(key, "", "missing value", "a value");
  if (!v.IsScalar()) fail(key, v.IsSequence() ? "[...]" : "{...}", "expected a single value, got", "a scalar");
  return v;
}

std::optional<std::string> YamlMap::text(const std::string& key) const {
  YAML::Node v = scalar(key);
  if (!v.IsDefined()) return std::nullopt;
  return v.Scalar();
}

void YamlMap::no_auto(const std::string& key, const std::string& allowed) const {
  fail(key, "auto",
       "has no auto: only training.micro_batch, parallelism.vpp, training.recompute and training.offload_layers are "
       "chosen by dtsim when left open, so give",
       allowed);
}

std::optional<long long> YamlMap::integer(const std::string& key, long long min, long long max) const {
  YAML::Node v = scalar(key);
  if (!v.IsDefined()) return std::nullopt;
  long long out = 0;
  if (v.Scalar() == "auto") no_auto(key, fmt::format("an integer in [{}, {}]", min, max));
  if (!YAML::convert<long long>::decode(v, out)) fail(key, v.Scalar(), "not an integer", fmt::format("an integer in [{}, {}]", min, max));
  if (out < min || out > max) fail(key, v.Scalar(), "out of range", fmt::format("an integer in [{}, {}]", min, max));
  return out;
}

std::optional<double> YamlMap::number(const std::string& key, double min, bool min_inclusive, double max) const {
  YAML::Node v = scalar(key);
  if (!v.IsDefined()) return std::nullopt;
  const std::string range = fmt::format("a number {} {:g}{}", min_inclusive ? ">=" : ">", min,
                                        std::isinf(max) ? std::string() : fmt::format(" and <= {:g}", max));
  double out = 0;
  if (v.Scalar() == "auto") no_auto(key, range);
  if (!YAML::convert<double>::decode(v, out) || !std::isfinite(out)) fail(key, v.Scalar(), "not a number", range);
  if (out < min || (!min_inclusive && out <= min) || out > max) fail(key, v.Scalar(), "out of range", range);
  return out;
}

std::optional<bool> YamlMap::boolean(const std::string& key) const {
  YAML::Node v = scalar(key);
  if (!v.IsDefined()) return std::nullopt;
  bool out = false;
  if (v.Scalar() == "auto") no_auto(key, "true, false");
  if (!YAML::convert<bool>::decode(v, out)) fail(key, v.Scalar(), "not a boolean", "true, false");
  return out;
}

std::optional<std::vector<long long>> YamlMap::integers(const std::string& key, long long min, long long max) const {
  YAML::Node v = node_[key];
  if (!v.IsDefined()) return std::nullopt;
  if (origins_) (*origins_)[dotted(key)] = locate(dotted(key), v);
  const std::string allowed = fmt::format("a list of integers in [{}, {}]", min, max);
  if (v.IsNull()) return std::vector<long long>{};
  if (!v.IsSequence()) fail(key, v.IsScalar() ? v.Scalar() : "{...}", "expected a list, got", allowed);
  std::vector<long long> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const YAML::Node item = v[i];
    const std::string item_key = fmt::format("{}[{}]", dotted(key), i);
    const std::string text = item.IsScalar() ? item.Scalar() : "...";
    long long value = 0;
    if (!item.IsScalar() || !YAML::convert<long long>::decode(item, value))
      throw InputError(item_key, text, "not an integer", allowed, locate(dotted(key), item));
    if (value < min || value > max) throw InputError(item_key, text, "out of range", allowed, locate(dotted(key), item));
    out.push_back(value);
  }
  return out;
}

std::optional<std::vector<std::string>> YamlMap::names(const std::string& key, bool (*known)(std::string_view),
                                                       std::string_view allowed) const {
  YAML::Node v = node_[key];
  if (!v.IsDefined()) return std::nullopt;
  if (origins_) (*origins_)[dotted(key)] = locate(dotted(key), v);
  const std::string list = fmt::format("a list of: {}", allowed);
  if (v.IsNull()) return std::vector<std::string>{};
  if (!v.IsSequence()) fail(key, v.IsScalar() ? v.Scalar() : "{...}", "expected a list, got", list);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const YAML::Node item = v[i];
    const std::string item_key = fmt::format("{}[{}]", dotted(key), i);
    if (!item.IsScalar()) throw InputError(item_key, "...", "not a name", std::string(allowed), locate(dotted(key), item));
    if (!known(item.Scalar()))
      throw InputError(item_key, item.Scalar(), "unknown name", std::string(allowed), locate(dotted(key), item));
    out.push_back(item.Scalar());
  }
  return out;
}

bool YamlMap::is_map(const std::string& key) const { return node_[key].IsMap(); }
bool YamlMap::is_list(const std::string& key) const { return node_[key].IsSequence(); }
bool YamlMap::is_null(const std::string& key) const { return node_[key].IsDefined() && node_[key].IsNull(); }

YamlMap YamlMap::map(const std::string& key) const {
  YAML::Node v = node_[key];
  if (origins_) (*origins_)[dotted(key)] = locate(dotted(key), v);
  return YamlMap(v, dotted(key), file_, origins_, overridden_);
}

std::vector<YamlMap> YamlMap::maps(const std::string& key) const {
  YAML::Node v = node_[key];
  if (origins_) (*origins_)[dotted(key)] = locate(dotted(key), v);
  if (!v.IsSequence()) fail(key, v.IsScalar() ? v.Scalar() : "{...}", "expected a list of maps, got", "[{...}, ...]");
  std::vector<YamlMap> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string item = fmt::format("{}[{}]", dotted(key), i);
    if (!v[i].IsMap())
      throw InputError(item, v[i].IsScalar() ? v[i].Scalar() : "[...]", "is not a map", "{key: value, ...}",
                       locate(dotted(key), v[i]));
    out.emplace_back(v[i], item, file_, origins_, overridden_);
  }
  return out;
}

std::string resolve_path(const std::string& scenario_file, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute() || scenario_file.empty() || scenario_file.front() == '<') return path;
  return (std::filesystem::path(scenario_file).parent_path() / p).lexically_normal().string();
}

}  // namespace dtsim::scenario
