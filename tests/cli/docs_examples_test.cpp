// The docs' examples cannot rot: every fenced block of README.md and docs/*.md whose first line is `$ ./dtsim ...`
// is run from the repository, and what the block shows must be what the program prints. A shown line must equal
// a printed line, in order, lines between them skipped; "..." inside a shown line stands for any text, and a
// shown line that begins with "..." for any number of lines. A block that cannot run here (it needs Slurm, a file
// the reader writes, or minutes of a 2-core machine) says so on the line before it:
// `<!-- docs-test: not run (REASON) -->`; the test counts those, and fails on a block it cannot run that does not.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_support.hpp"

namespace {

using namespace cli_support;

struct Example {
  int line = 0;               // of the `$` line in its page
  std::string command;        // after "$ ./dtsim ", without a trailing "# comment"
  std::vector<std::string> shown;
  bool not_run = false;
};

std::string trimmed_right(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(trimmed_right(line));
  return out;
}

std::vector<Example> examples_of(const std::string& page) {
  const auto lines = lines_of(page);
  std::vector<Example> out;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    if (lines[i].rfind("```", 0) != 0 || lines[i + 1].rfind("$ ./dtsim", 0) != 0) continue;
    Example e;
    e.line = static_cast<int>(i) + 2;
    e.not_run = i > 0 && lines[i - 1].rfind("<!-- docs-test: not run (", 0) == 0;
    std::string command = lines[i + 1].substr(std::string("$ ./dtsim").size());
    if (const auto hash = command.find("  #"); hash != std::string::npos) command = command.substr(0, hash);
    e.command = trimmed_right(command);
    std::size_t j = i + 2;
    for (; j < lines.size() && lines[j].rfind("```", 0) != 0; ++j) e.shown.push_back(lines[j]);
    out.push_back(std::move(e));
    i = j;
  }
  return out;
}

// `shown` ("..." for any text) matches `line`.
bool matches(const std::string& shown, const std::string& line) {
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (std::size_t at; (at = shown.find("...", from)) != std::string::npos; from = at + 3) parts.push_back(shown.substr(from, at - from));
  parts.push_back(shown.substr(from));
  if (parts.size() == 1) return shown == line;
  if (line.rfind(parts.front(), 0) != 0) return false;
  std::size_t pos = parts.front().size();
  for (std::size_t k = 1; k + 1 < parts.size(); ++k) {
    pos = line.find(parts[k], pos);
    if (pos == std::string::npos) return false;
    pos += parts[k].size();
  }
  return line.size() >= pos + parts.back().size() && line.compare(line.size() - parts.back().size(), std::string::npos, parts.back()) == 0;
}

// The first shown line not found in `printed` (after the lines before it), or "" when all are.
std::string first_missing(const std::vector<std::string>& shown, const std::vector<std::string>& printed) {
  std::size_t next = 0;
  for (const auto& s : shown) {
    if (s.empty()) continue;
    if (s.find_first_not_of(' ') != std::string::npos && s.substr(s.find_first_not_of(' ')).rfind("...", 0) == 0) continue;
    while (next < printed.size() && !matches(s, printed[next])) ++next;
    if (next == printed.size()) return s;
    ++next;
  }
  return "";
}

// A command the test can run: the program alone, no shell.
bool runnable(const std::string& command) { return command.find_first_of("|&;<>`$") == std::string::npos; }

void check_page(const std::string& page) {
  const auto examples = examples_of(slurp(src(page)));
  int run = 0, not_run = 0;
  for (const auto& e : examples) {
    const std::string where = fmt::format("{}:{}: ./dtsim{}", page, e.line, e.command);
    if (e.not_run) {
      ++not_run;
      continue;
    }
    INFO(where);
    REQUIRE_MESSAGE(runnable(e.command), "a shell command: run it in a test of its own and mark the block not run");
    const Result r = dtsim(e.command, "cd " + std::string(DTSIM_SOURCE_DIR) + " &&");
    ++run;
    // A shown error (its block shows "dtsim: error: ...") is what the program writes to stderr, with status 2.
    const bool error = !e.shown.empty() && e.shown.front().rfind("dtsim: error:", 0) == 0;
    CHECK(r.status == (error ? 2 : 0));
    const std::string missing = first_missing(e.shown, lines_of(error ? r.err : r.out));
    CHECK_MESSAGE(missing.empty(), "shown but not printed: ", missing);
  }
  MESSAGE(fmt::format("{}: {} examples run, {} marked not run", page, run, not_run));
}

}  // namespace

TEST_CASE("docs: README.md's examples print what they show") { check_page("README.md"); }
TEST_CASE("docs: docs/commands.md's examples print what they show") { check_page("docs/commands.md"); }
TEST_CASE("docs: docs/scenarios.md's examples print what they show") { check_page("docs/scenarios.md"); }
TEST_CASE("docs: docs/results.md's examples print what they show") { check_page("docs/results.md"); }
TEST_CASE("docs: docs/simulation.md's examples print what they show") { check_page("docs/simulation.md"); }
TEST_CASE("docs: docs/workloads.md's examples print what they show") { check_page("docs/workloads.md"); }
TEST_CASE("docs: docs/serving.md's examples print what they show") { check_page("docs/serving.md"); }
TEST_CASE("docs: docs/planning.md's examples print what they show") { check_page("docs/planning.md"); }
TEST_CASE("docs: docs/sweeps.md's examples print what they show") { check_page("docs/sweeps.md"); }
TEST_CASE("docs: docs/python.md's examples print what they show") { check_page("docs/python.md"); }
TEST_CASE("docs: docs/validation.md's examples print what they show") { check_page("docs/validation.md"); }
TEST_CASE("docs: docs/scale.md's examples print what they show") { check_page("docs/scale.md"); }
TEST_CASE("docs: docs/claims.md's examples print what they show") { check_page("docs/claims.md"); }
TEST_CASE("docs: docs/reliability.md's examples print what they show") { check_page("docs/reliability.md"); }
TEST_CASE("docs: docs/topologies.md's examples print what they show") { check_page("docs/topologies.md"); }

// docs/validation.md opens with the README's validation summary; the README's rows are checked against the tables'
// own runs (validate_cli_test.cpp), so the page's copy must be the same rows.
TEST_CASE("docs: docs/validation.md's summary table is the README's") {
  const auto rows_of = [](const std::string& text, const std::string& after) {
    std::vector<std::string> out;
    std::istringstream in(text.substr(text.find(after)));
    bool inside = false;
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("| table |")) inside = true;
      else if (inside && !line.starts_with("|")) break;
      if (inside) out.push_back(line);
    }
    return out;
  };
  const auto readme = rows_of(slurp(src("README.md")), "## Validation summary");
  CHECK(readme.size() > 10);
  CHECK(rows_of(slurp(src("docs/validation.md")), "## Summary") == readme);
}

// A new page cannot escape the checks above: each page under docs/ is one of them (seed-claims.md is the
// output of `claims`, checked by its own test).
TEST_CASE("docs: every page under docs/ has its examples run") {
  const std::set<std::string> checked = {"commands.md", "scenarios.md", "results.md",  "simulation.md", "workloads.md",
                                         "serving.md",  "planning.md",  "sweeps.md",   "python.md",     "validation.md",
                                         "scale.md",    "claims.md",    "reliability.md", "topologies.md", "seed-claims.md"};
  for (const auto& e : fs::directory_iterator(std::string(DTSIM_SOURCE_DIR) + "/docs"))
    if (e.path().extension() == ".md") CHECK_MESSAGE(checked.count(e.path().filename().string()) == 1, e.path());
}

namespace {

// Every leaf field of `j` by dotted path, an array's elements under the array's path; the fields that hold a
// scenario's own keys (the resolved scenario, a sweep point's values, what auto chose, the reference's figures)
// whole.
void fields_of(const nlohmann::json& j, const std::string& path, std::set<std::string>& out) {
  static const std::set<std::string> whole = {"scenario", "point", "auto_chosen", "reference", "memory.notes"};
  if (whole.contains(path)) {
    out.insert(path);
    return;
  }
  if (j.is_array()) {
    for (const auto& e : j) fields_of(e, path, out);
    if (j.empty()) out.insert(path);
    return;
  }
  if (!j.is_object()) {
    out.insert(path);
    return;
  }
  for (const auto& [k, v] : j.items()) fields_of(v, path.empty() ? k : path + "." + k, out);
}

// `path` is defined in `page`: written whole (`a.b.c`), or an ancestor (`a.b`) on a line that also names the leaf.
bool documented(const std::string& path, const std::vector<std::string>& page) {
  const std::string leaf = fmt::format("`{}`", path.substr(path.rfind('.') + 1));
  for (const auto& line : page) {
    if (line.find(fmt::format("`{}`", path)) != std::string::npos) return true;
    for (std::size_t dot = path.rfind('.'); dot != std::string::npos && dot > 0; dot = path.rfind('.', dot - 1))
      if (line.find(fmt::format("`{}`", path.substr(0, dot))) != std::string::npos && line.find(leaf) != std::string::npos)
        return true;
  }
  return false;
}

}  // namespace

TEST_CASE("docs: docs/results.md defines every field a training step, a serving batch and a stream print") {
  const auto page = lines_of(slurp(src("docs/results.md")));
  for (const std::string args : {"scenarios/models/gpt-22b-tp8.yaml --set training.tokens=1e11 --set reliability.seed=1",
                                 "scenarios/models/llama3-8b-fsdp-32xh100.yaml",
                                 "scenarios/serving/llama2-70b-8xh100.yaml --set inference.kv_offload.host_GB=100 "
                                 "--set inference.kv_offload.hit=0.3",
                                 "scenarios/bench/llama2-70b-stream-8xh100.yaml --set inference.requests.duration_s=20 "
                                 "--set inference.kv_offload.host_GB=100 --set inference.kv_offload.hit=0.3"}) {
    const Result r = dtsim("run " + src("") + args + " --format json");
    REQUIRE(r.status == 0);
    std::set<std::string> fields;
    const auto doc = nlohmann::json::parse(r.out);
    for (const auto& row : doc.is_array() ? doc : nlohmann::json::array({doc})) fields_of(row, "", fields);
    for (const auto& f : fields) {
      INFO(args, ": ", f);
      CHECK(documented(f, page));
    }
  }
}

namespace {

// Every key a reader accepts: the quoted names in each `allow_only({...})` of the scenario's and the topology's
// readers (their source is the list; a key added there and not documented fails here).
std::set<std::string> accepted_keys() {
  std::set<std::string> out;
  for (const char* folder : {"sim/scenario", "topology"})
    for (const auto& e : fs::directory_iterator(src(folder))) {
      if (e.path().extension() != ".cpp") continue;
      const std::string text = slurp(e.path());
      for (std::size_t at = text.find("allow_only({"); at != std::string::npos; at = text.find("allow_only({", at + 1)) {
        const std::size_t end = text.find('}', at);
        for (std::size_t q = text.find('"', at); q < end; q = text.find('"', q + 1)) {
          const std::size_t close = text.find('"', q + 1);
          out.insert(text.substr(q + 1, close - q - 1));
          q = close;
        }
      }
    }
  return out;
}

}  // namespace

TEST_CASE("docs: every key a scenario or user graph may hold is named in docs/") {
  std::string pages;
  for (const auto& e : fs::directory_iterator(src("docs")))
    if (e.path().extension() == ".md" && e.path().filename() != "seed-claims.md") pages += slurp(e.path());
  const auto keys = accepted_keys();
  CHECK(keys.size() > 100);   // the readers' lists were found
  for (const auto& key : keys) {
    bool named = false;
    for (const char* form : {"`{}", "{}:", ".{}", "{{{}"})
      named = named || pages.find(fmt::format(fmt::runtime(form), key)) != std::string::npos;
    CHECK_MESSAGE(named, "a key no docs page names: ", key);
  }
}
