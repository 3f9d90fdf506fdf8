// Runs the built dtsim program as a user would: exit status, stdout, stderr.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace cli_support {

namespace fs = std::filesystem;


struct Result {
  int status;
  std::string out;
  std::string err;
};

// A disk that fills after `bytes` bytes of any one file: the file-size limit (RLIMIT_FSIZE, in 512-byte blocks for
// /bin/sh's ulimit) with SIGXFSZ ignored, so a write past it fails with EFBIG as a write to a full disk fails.
inline std::string disk_full_after(long bytes) {
  return "trap '' XFSZ; ulimit -f " + std::to_string(bytes / 512) + ";";
}

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `shell_prefix` runs before the program in the same /bin/sh, e.g. "ulimit -f 40;".
inline Result dtsim(const std::string& args, const std::string& shell_prefix = "") {
  const fs::path err = fs::temp_directory_path() / ("dtsim_cli_test_" + std::to_string(::getpid()) + ".err");
  const std::string cmd = shell_prefix + " exec " + std::string(DTSIM_BINARY) + " " + args + " 2>" + err.string();
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int raw = ::pclose(pipe);
  Result r{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, out, slurp(err)};
  fs::remove(err);
  return r;
}

// A fresh, empty path under the temp directory for one test case: `suite` and `tag` name it, the pid keeps
// parallel runs apart (ctest runs the cases of one file in parallel). The directory itself is not created.
inline fs::path fresh_dir(const std::string& suite, const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("dtsim_" + suite + "_test_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

// `text` written as dir/name, the directory made first: the file's path.
inline fs::path written(const fs::path& dir, const std::string& name, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

// The rows of a JSON-lines text, one object per line.
inline std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

inline std::string src(const std::string& rel) { return std::string(DTSIM_SOURCE_DIR) + "/" + rel; }

// The names a list in tests/data/frameworks holds (an engine's flags or config keys, each file citing its source):
// its lines that are not comments.
inline std::set<std::string> listed(const std::string& file) {
  std::set<std::string> names;
  std::istringstream in(slurp(src("tests/data/frameworks/" + file)));
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && !line.starts_with("#")) names.insert(line);
  return names;
}

// Slurm's commands stubbed in DIR/bin: scontrol names `nodes` (one a line, as `scontrol show hostnames` does), srun
// writes the arguments it is given to $SRUN_ARGS, one a line.
inline void stub_slurm(const fs::path& dir, const std::vector<std::string>& nodes = {"node1"}) {
  fs::create_directories(dir / "bin");
  std::string names;
  for (const auto& n : nodes) names += " " + n;
  std::ofstream(dir / "bin" / "scontrol") << "#!/bin/sh\nprintf '%s\\n'" << names << "\n";
  std::ofstream(dir / "bin" / "srun") << "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$SRUN_ARGS\"\n";
  fs::permissions(dir / "bin" / "scontrol", fs::perms::owner_all);
  fs::permissions(dir / "bin" / "srun", fs::perms::owner_all);
}

// The arguments the stubbed srun was given, read back from its $SRUN_ARGS file.
inline std::vector<std::string> srun_arguments(const fs::path& file) {
  std::vector<std::string> args;
  std::istringstream launched(slurp(file));
  for (std::string a; std::getline(launched, a);) args.push_back(a);
  return args;
}

inline std::vector<fs::path> files_in(const std::string& rel) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(src(rel)))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace cli_support

