// A strict reader of the Trace Event Format (the JSON object form Perfetto and chrome://tracing load), for the
// traces dtsim writes: every event's fields by phase, complete slices ("X") on one thread either disjoint or
// nested, every flow's start ("s") and finish ("f", bound to its enclosing slice) paired by id, each inside a slice
// of its thread and the finish no earlier than the start; counters numeric. Perfetto's trace processor is not a
// Debian package, so this is the check the tests can run.
#pragma once

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trace_format {

using nlohmann::json;

inline std::vector<std::string> errors(const json& trace) {
  std::vector<std::string> out;
  const auto fail = [&](const std::string& what, const json& e) {
    if (out.size() < 20) out.push_back(what + ": " + e.dump().substr(0, 200));
  };
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    out.push_back("not an object with a traceEvents array");
    return out;
  }
  if (trace.contains("displayTimeUnit") && trace["displayTimeUnit"] != "ms" && trace["displayTimeUnit"] != "ns")
    out.push_back("displayTimeUnit is neither ms nor ns");
  struct Slice {
    double ts, end;
  };
  std::map<std::pair<long long, long long>, std::vector<Slice>> slices;   // (pid, tid)
  struct FlowEnd {
    long long pid, tid;
    double ts;
    std::string name, cat;
  };
  std::map<long long, std::vector<FlowEnd>> starts, finishes;
  for (const auto& e : trace["traceEvents"]) {
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string()) {
      fail("an event without a phase", e);
      continue;
    }
    const std::string ph = e["ph"];
    if (!e.contains("pid") || !e["pid"].is_number_integer()) fail("no integer pid", e);
    if (!e.contains("name") || !e["name"].is_string()) fail("no name", e);
    const bool timed = ph == "X" || ph == "C" || ph == "s" || ph == "f";
    if (timed && (!e.contains("ts") || !e["ts"].is_number() || e["ts"].get<double>() < 0)) fail("no ts >= 0", e);
    const bool threaded = ph == "X" || ph == "s" || ph == "f";
    if (threaded && (!e.contains("tid") || !e["tid"].is_number_integer())) fail("no integer tid", e);
    if (!out.empty()) continue;
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) fail("a slice without dur >= 0", e);
      const double ts = e["ts"];
      slices[{e["pid"], e["tid"]}].push_back({ts, ts + e["dur"].get<double>()});
    } else if (ph == "M") {
      const std::string name = e["name"];
      if (name != "process_name" && name != "thread_name" && name != "process_sort_index" && name != "thread_sort_index")
        fail("unknown metadata", e);
      if (!e.contains("args") || !e["args"].is_object()) fail("metadata without args", e);
      else if (name.ends_with("_name") && (!e["args"].contains("name") || !e["args"]["name"].is_string())) fail("a name without args.name", e);
      else if (name.ends_with("_sort_index") && !e["args"].value("sort_index", json()).is_number_integer()) fail("a sort index that is no integer", e);
      if (name.starts_with("thread") && (!e.contains("tid") || !e["tid"].is_number_integer())) fail("thread metadata without tid", e);
    } else if (ph == "C") {
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) fail("a counter without args", e);
      else
        for (const auto& [k, v] : e["args"].items())
          if (!v.is_number()) fail("a counter value that is no number", e);
    } else if (ph == "s" || ph == "f") {
      if (!e.contains("id") || !e["id"].is_number_integer()) fail("a flow without integer id", e);
      if (!e.contains("cat") || !e["cat"].is_string()) fail("a flow without cat", e);
      if (ph == "f" && e.value("bp", "") != "e") fail("a flow finish not bound to its enclosing slice (bp e)", e);
      if (!out.empty()) continue;
      (ph == "s" ? starts : finishes)[e["id"]].push_back({e["pid"], e["tid"], e["ts"], e["name"], e["cat"]});
    } else {
      fail("a phase dtsim does not write", e);
    }
  }
  for (auto& [thread, list] : slices) {
    std::ranges::sort(list, [](const Slice& a, const Slice& b) { return a.ts < b.ts || (a.ts == b.ts && a.end > b.end); });
    // Times are printed to the nanosecond and read back as ts + dur: a femtosecond of rounding is no overlap.
    constexpr double kSlack = 1e-6;
    std::vector<double> open;   // ends of the slices enclosing the current one
    for (const auto& s : list) {
      while (!open.empty() && open.back() <= s.ts + kSlack) open.pop_back();
      if (!open.empty() && s.end > open.back() + kSlack)
        out.push_back(fmt::format("slices overlap without nesting on pid {} tid {} at {} us", thread.first, thread.second, s.ts));
      open.push_back(s.end);
    }
  }
  const auto enclosed = [&](const FlowEnd& f) {
    const auto it = slices.find({f.pid, f.tid});
    return it != slices.end() &&
           std::ranges::any_of(it->second, [&](const Slice& s) { return s.ts <= f.ts && f.ts <= s.end; });
  };
  for (const auto& [id, s] : starts) {
    const auto f = finishes.find(id);
    if (s.size() != 1 || f == finishes.end() || f->second.size() != 1) {
      out.push_back(fmt::format("flow {} has not exactly one start and one finish", id));
      continue;
    }
    const auto& a = s.front();
    const auto& b = f->second.front();
    if (a.name != b.name || a.cat != b.cat) out.push_back(fmt::format("flow {}: start and finish differ in name or cat", id));
    if (b.ts < a.ts) out.push_back(fmt::format("flow {} finishes before it starts", id));
    if (!enclosed(a) || !enclosed(b)) out.push_back(fmt::format("flow {} is not inside a slice of its thread", id));
  }
  for (const auto& [id, f] : finishes)
    if (!starts.contains(id)) out.push_back(fmt::format("flow {} finishes without a start", id));
  return out;
}

}  // namespace trace_format
