// A strict reader over one YAML map: typed getters that reject wrong types and out-of-range values, and a
// check that rejects unknown keys. Every error names file:line, the dotted key, the value and what is allowed.
// Private to the scenario loader: no YAML type leaves sim/scenario.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

namespace dtsim::scenario {

// Parses every document of `text` (file names `file` in errors) and checks what yaml-cpp lets through: every map
// key a single value, no key twice in one map (yaml-cpp keeps the first silently). Syntax errors, nesting past
// yaml-cpp's depth limit and these are InputErrors naming file:line.
std::vector<YAML::Node> parse_yaml(const std::string& text, const std::string& file);

class YamlMap {
 public:
  // `path` is the dotted key of this map ("cluster"); `origins` collects key -> "file:line" as keys are read;
  // keys under one of `overridden` (dotted key, where it was set) came from elsewhere than their place in the
  // file: the command line ("--set") or a sweep axis (the axis value's file:line), and are located there.
  YamlMap(YAML::Node node, std::string path, std::string file, std::map<std::string, std::string>* origins,
          const std::vector<std::pair<std::string, std::string>>* overridden = nullptr);

  void allow_only(std::initializer_list<std::string_view> keys) const;
  [[nodiscard]] bool has(const std::string& key) const;

  std::optional<std::string> text(const std::string& key) const;
  std::optional<long long> integer(const std::string& key, long long min, long long max) const;
  // A number > min (or >= min when `min_inclusive`) and <= max.
  std::optional<double> number(const std::string& key, double min, bool min_inclusive, double max) const;
  std::optional<bool> boolean(const std::string& key) const;
  // A list of integers, each in [min, max]; `null` or `[]` gives an empty list.
  std::optional<std::vector<long long>> integers(const std::string& key, long long min, long long max) const;
  // A list of names, each one `known` accepts (`allowed` lists them); `null` or `[]` gives an empty list. An
  // unknown name is an error naming its item ("key[i]").
  std::optional<std::vector<std::string>> names(const std::string& key, bool (*known)(std::string_view),
                                                std::string_view allowed) const;
  [[nodiscard]] bool is_map(const std::string& key) const;
  [[nodiscard]] bool is_list(const std::string& key) const;
  [[nodiscard]] bool is_null(const std::string& key) const;
  YamlMap map(const std::string& key) const;
  // A list of maps (each one's dotted key "key[i]"); an error when `key` is no list or an entry no map.
  std::vector<YamlMap> maps(const std::string& key) const;
  [[nodiscard]] std::vector<std::string> keys() const;

  [[nodiscard]] std::string dotted(const std::string& key) const;
  [[nodiscard]] std::string where(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& value, const std::string& reason,
                         const std::string& allowed) const;
  [[noreturn]] void fail_here(const std::string& value, const std::string& reason, const std::string& allowed) const;
  // `auto` given to a key that has none (only the plan knobs Scenario::auto_keys names take it).
  [[noreturn]] void no_auto(const std::string& key, const std::string& allowed) const;

 private:
  YAML::Node scalar(const std::string& key) const;
  [[nodiscard]] std::string locate(const std::string& dotted_key, const YAML::Node& node) const;

  YAML::Node node_;
  std::string path_;
  std::string file_;
  std::map<std::string, std::string>* origins_;
  const std::vector<std::pair<std::string, std::string>>* overridden_;
};

// `path` as the scenario `scenario_file` means it: relative paths from the scenario's folder (an embedded
// scenario's, "<...>", from the working directory).
std::string resolve_path(const std::string& scenario_file, const std::string& path);

// "file:line" of a node (1-based), or "file" when it has no position (a --set override says "--set").
std::string location(const std::string& file, const YAML::Node& node);

}  // namespace dtsim::scenario
