// The scale tests' harness (simgrid_scale_test.cpp and its neighbours): a step played with chosen shortcuts, the
// deviation between two plays, and the contended fabric and job they are checked on.
#pragma once

#include <cmath>
#include <vector>

#include "sim/simgrid_support.hpp"

namespace scale_support {

using namespace simgrid_support;
using dtsim::test::gpt_job;

struct Shortcuts {
  bool memoize = false;
  bool aggregate = false;
  bool symmetry = false;
};

struct Played {
  double step = 0;
  std::vector<double> class_ends;
  double memoized = 0, refused = 0, shapes = 0, aggregated = 0;
  bool symmetric = false;
};

inline Played play(const workloads::StepGraph& g, const topology::Topology& topo, Shortcuts s,
            sim::Algorithm algorithm = sim::Algorithm::Auto) {
  const auto v = isolated([&] {
    sim::SimgridOptions options;
    options.algorithm = algorithm;
    options.memoize = s.memoize;
    options.aggregate = s.aggregate;
    options.symmetry = s.symmetry;
    const auto t = sim::play_simgrid(g, topo, options);
    std::vector<double> out{t.step_time.value(),
                            static_cast<double>(t.memoized_collectives),
                            static_cast<double>(t.memo_refused_collectives),
                            static_cast<double>(t.memo_shapes),
                            static_cast<double>(t.aggregated_collectives),
                            t.symmetry.rfind("one rank", 0) == 0 ? 1.0 : 0.0};
    for (const auto& c : t.classes) out.push_back(c.end.value());
    return out;
  });
  return {v[0], {v.begin() + 6, v.end()}, v[1], v[2], v[3], v[4], v[5] == 1.0};
}

inline double deviation(const Played& a, const Played& b) { return std::abs(a.step / b.step - 1); }

// The same step time and class ends, to 1e-9.
inline void check_same_timing(const Played& on, const Played& off) {
  CHECK(on.step == doctest::Approx(off.step).epsilon(1e-9).scale(0));
  REQUIRE(on.class_ends.size() == off.class_ends.size());
  for (std::size_t c = 0; c < on.class_ends.size(); ++c)
    CHECK(on.class_ends[c] == doctest::Approx(off.class_ends[c]).epsilon(1e-9).scale(0));
}

// 8 nodes of 2 A100s on an NVSwitch, one NIC per GPU, two nodes per leaf, uplinks oversubscribed 2:1; TP 2
// (one node), PP 2, DP 4. The data-parallel rings of the two TP ranks leave their leaves through the uplinks
// and share them (and the spines) with each other and with the pipeline sends: real contention. The TP pairs
// sit alone on their NVSwitch links.
inline topology::Topology contended_fabric() {
  auto spec = topology::default_cluster("a100-sxm4-80gb", IntraKind::NvSwitch, 8, 2);
  spec.inter = topology::InterKind::FatTree;
  spec.fabric.leaf_ports = 4;
  spec.oversubscription = 2;
  return topology::build_cluster(spec).topology;
}

inline workloads::StepGraph contended_job() {
  return workloads::generate_step(gpt_job(2, 2, 4, 16, 4), topology::find_gpu("a100-sxm4-80gb"));
}

}  // namespace scale_support
