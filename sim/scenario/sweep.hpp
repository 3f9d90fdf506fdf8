// `sweep:` axes: one scenario document becomes one document per point. Private to the scenario loader.
//
//   sweep:
//     training.micro_batch: [1, 2, 4]      # an axis: a dotted key and its values
//     zip:                                 # axes that advance together, as one axis (lists of equal length)
//       name: [nvswitch, ring]
//       cluster.intra: [nvswitch, ring]
//
// Points are the cartesian product of the axes, the first axis outermost; each point is the document without
// `sweep`, with every axis key set to its value (a value may be a whole map, e.g. a `cluster`).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/scenario/scenario.hpp"

namespace dtsim::scenario {

struct ExpandedPoint {
  YAML::Node doc;
  SweepPoint point;
  std::string name_suffix;   // "[micro_batch=2]" unless the point sets `name` itself
  std::vector<std::pair<std::string, std::string>> set_at;   // each key the point sets -> its value's file:line
};

// The points of `doc` (one point with index -1 when it has no `sweep`; its document is `doc` itself), each built
// when `fn` is to read it and dropped after, so that a loader holds one point's document at a time (100,000 points'
// documents took about 1 GB); at most `most_points` of them (the fuzz target passes fewer: the check is the same
// code at any limit). `file` names errors.
void for_each_sweep_point(const YAML::Node& doc, const std::string& file, std::size_t most_points,
                          const std::function<void(ExpandedPoint&)>& fn);

// Sets the dotted `key` of `root` to `value`, creating maps on the way; throws InputError at `location` when a
// part of the path is not a map.
void set_dotted(YAML::Node root, const std::string& key, const YAML::Node& value, const std::string& location);
// Removes the dotted `key` from the map `root`; false when it was not there (a step of its path absent or no map).
bool erase_dotted(YAML::Node root, const std::string& key);

}  // namespace dtsim::scenario
