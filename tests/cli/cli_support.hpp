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
#include <string>
#include <sys/wait.h>
#include <vector>

namespace cli_support {

namespace fs = std::filesystem;


struct Result {
  int status;
  std::string out;
  std::string err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline Result dtsim(const std::string& args) {
  const fs::path err = fs::temp_directory_path() / ("dtsim_cli_test_" + std::to_string(::getpid()) + ".err");
  const std::string cmd = std::string(DTSIM_BINARY) + " " + args + " 2>" + err.string();
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

inline std::string src(const std::string& rel) { return std::string(DTSIM_SOURCE_DIR) + "/" + rel; }

inline std::vector<fs::path> files_in(const std::string& rel) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(src(rel)))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace cli_support

