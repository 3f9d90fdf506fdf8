// A sweep's rows and the files that hold them (sweep.cpp), OUT/results.jsonl and OUT/results.csv (or a shard's),
// each rewritten whole through a temporary file.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>


namespace dtsim::drivers {

using Rows = std::map<int, nlohmann::json>;   // by point index: sweep order

// Which slice of a sweep's points a process runs: those whose index is index-1 modulo count.
struct Shard {
  int index = 1;   // 1..count
  int count = 1;
};

struct Files {
  std::string jsonl;
  std::string csv;
};

// The files of `shard` in `dir`: results.{jsonl,csv}, or results.shard-I-of-N.{jsonl,csv}.
Files files_of(const std::string& dir, const Shard& shard);
// Writes `text` to `path` through a temporary file and a rename: readers see the old file or the new one.
void replace_file(const std::string& path, const std::string& text);
// The rows as CSV (empty for no rows).
std::string csv_text(const Rows& rows);
// Adds the strong and weak scaling efficiency columns against the sweep's smallest configuration.
void add_scaling(Rows& rows);
// Rewrites both files from the rows.
void write_both(const Files& files, const Rows& rows);
// The rows of a JSONL file; a last line cut short by a kill is dropped.
Rows read_rows(const std::string& path);

}  // namespace dtsim::drivers
