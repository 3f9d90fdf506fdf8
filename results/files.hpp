// Writing a result file: whole or not at all, with a one-line error naming the path and the step that failed.
#pragma once

#include <string>

namespace dtsim::results {

// Creates `dir` and its parents (an --out directory).
void make_directory(const std::string& dir);

// Writes `text` to `path` whole: beside it, synced, then renamed over it (a device or FIFO is written in place).
// InputError naming the path, the step that failed and errno's text; `key` names the option that gave the path.
// A path ending in `.gz` gets `text` gzip-compressed (a trace of every rank: about a tenth of its size).
void write_file(const std::string& path, const std::string& text, const std::string& key);
// The same, never compressed.
void write_plain_file(const std::string& path, const std::string& text, const std::string& key);
// `text` as a gzip stream.
std::string gzipped(const std::string& text);
// Appends `text` to `path` and syncs it (a sweep's rows, one at a time); InputError naming the path and errno's text.
void append_file(const std::string& path, const std::string& text, const std::string& key);

}  // namespace dtsim::results
