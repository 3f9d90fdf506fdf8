// The `reliability` section and `cluster.storage`: defaults with their sources, a class's rate replaced or added,
// the resolved scenario written in full and read back, and the one-line errors.
#include <doctest/doctest.h>

#include <algorithm>

#include "scenario/scenario_support.hpp"

using namespace dtsim;
using namespace dtsim::scenario;
using namespace dtsim::scenario::test;

namespace {

const results::FailureClass* find_class(const ReliabilitySpec& r, const std::string& name) {
  const auto it = std::find_if(r.failures.begin(), r.failures.end(), [&](const auto& c) { return c.component == name; });
  return it == r.failures.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("reliability: Llama 3's rates by default, a class replaced, one added, none, storage and checkpoints") {
  const Scenario d = load_one(kLlamaTp8);
  CHECK(d.reliability.failures.size() == results::default_failure_classes().size());
  CHECK_FALSE(d.reliability.interval_s);
  CHECK(d.reliability.restart_s == 600);
  CHECK_FALSE(d.storage.write_GBps);
  const Scenario s = load_one(std::string(kLlamaTp8) + R"(
reliability:
  failures:
    gpu: {per_hour: 2.0e-5, source: "a fleet log"}
    rack_power: {per_hour: 1.0e-4, per: node, source: "a made-up figure"}
  checkpoint: {interval_s: 900, async: true}
  restart_s: 120
)", {{"cluster.storage", "{write_GBps: 50, read_GBps: 100}"}});
  REQUIRE(find_class(s.reliability, "gpu") != nullptr);
  CHECK(find_class(s.reliability, "gpu")->per_hour == 2.0e-5);
  CHECK(find_class(s.reliability, "gpu")->source == "a fleet log");
  REQUIRE(find_class(s.reliability, "rack_power") != nullptr);
  CHECK(find_class(s.reliability, "rack_power")->scope == results::FailureScope::Node);
  CHECK(find_class(s.reliability, "gpu_hbm")->per_hour == find_class(d.reliability, "gpu_hbm")->per_hour);
  CHECK(*s.reliability.interval_s == 900);
  CHECK(s.reliability.async);
  CHECK(s.reliability.restart_s == 120);
  CHECK(*s.storage.write_GBps == 50);
  CHECK(*s.storage.read_GBps == 100);
  // Written in full and read back the same.
  const Scenario back = load_one(to_yaml(s));
  CHECK(back.reliability.failures.size() == s.reliability.failures.size());
  CHECK(find_class(back.reliability, "rack_power")->per_hour == 1.0e-4);
  CHECK(find_class(back.reliability, "gpu_hbm")->source == find_class(d.reliability, "gpu_hbm")->source);
  CHECK(*back.reliability.interval_s == 900);
  CHECK(*back.storage.read_GBps == 100);
  CHECK(load_one(std::string(kLlamaTp8) + "reliability: {failures: none}\n").reliability.failures.empty());
  CHECK(load_one(to_yaml(load_one(std::string(kLlamaTp8) + "reliability: {failures: none}\n"))).reliability.failures.empty());
}

TEST_CASE("reliability: what a failure takes out, spares, shrinking and stragglers are read and written back") {
  const Scenario d = load_one(kLlamaTp8);
  CHECK(d.reliability.on_failure == results::OnFailure::Restart);
  CHECK_FALSE(d.reliability.repair_s);
  // Software and planned maintenance take no server out; the hardware classes do.
  CHECK_FALSE(find_class(d.reliability, "software")->repair);
  CHECK_FALSE(find_class(d.reliability, "planned_maintenance")->repair);
  CHECK(find_class(d.reliability, "gpu")->repair);
  CHECK(find_class(d.reliability, "host_memory")->repair);
  const Scenario s = load_one(std::string(kLlamaTp8) + R"(
reliability:
  failures: {gpu: {per_hour: 2.0e-5, source: "a fleet log", repair: false}}
  on_failure: spare
  spares: 3
  repair_s: 86400
  stragglers: {ranks: {3: 1.2}, nodes: {0: 1.05}, nics: {n0-nic0: 2}, spread: 0.01, slow_nodes: default}
)");
  for (const Scenario& x : {s, load_one(to_yaml(s))}) {
    CHECK_FALSE(find_class(x.reliability, "gpu")->repair);
    CHECK(x.reliability.on_failure == results::OnFailure::Spare);
    CHECK(x.reliability.spares == 3);
    CHECK(*x.reliability.repair_s == 86400);
    REQUIRE(x.reliability.stragglers);
    const StragglerSpec& st = *x.reliability.stragglers;
    CHECK(st.ranks.at(3) == 1.2);
    CHECK(st.nodes.at(0) == 1.05);
    CHECK(st.nics.at("n0-nic0") == 2);
    CHECK(st.spread == 0.01);
    CHECK(st.slow_share == kSlowNodeShare);
    CHECK(st.slow_factor == kSlowNodeFactor);
    CHECK(st.slow_forward_only);
  }
  const Scenario shrink = load_one(std::string(kLlamaTp8) + "reliability: {on_failure: shrink, repair_s: 7200}\n");
  CHECK(load_one(to_yaml(shrink)).reliability.on_failure == results::OnFailure::Shrink);
}

TEST_CASE("reliability: bad values, a rate without its source and keys that need others are one-line errors") {
  const std::string base = kLlamaTp8;
  const auto err = [&](const std::string& section) { return error_of(base + section); };
  CHECK(err("reliability: {failures: sometimes}\n").find("reliability.failures: unknown failure model 'sometimes'") !=
        std::string::npos);
  CHECK(err("reliability: {failures: [gpu]}\n").find("reliability.failures: a list, not a failure model") != std::string::npos);
  CHECK(err("reliability: {failures: {gpu: {per_hour: 1e-5}}}\n").find("reliability.failures.gpu.source") != std::string::npos);
  CHECK(err("reliability: {failures: {fan: {per_hour: 1e-5, source: x}}}\n").find("reliability.failures.fan.per") !=
        std::string::npos);
  CHECK(err("reliability: {failures: {fan: {per_hour: 1e-5, source: x, per: rack}}}\n").find("unknown component 'rack'") !=
        std::string::npos);
  CHECK(err("reliability: {failures: {gpu: {per_hour: 2, source: x}}}\n").find("reliability.failures.gpu.per_hour") !=
        std::string::npos);
  CHECK(err("reliability: {checkpoint: {interval_s: 0}}\n").find("reliability.checkpoint.interval_s") != std::string::npos);
  CHECK(err("reliability: {restart_s: -1}\n").find("reliability.restart_s") != std::string::npos);
  CHECK(err("reliability: {on_failure: spare}\n").find("reliability.repair_s: missing for on_failure: spare") != std::string::npos);
  CHECK(err("reliability: {on_failure: shrink}\n").find("reliability.repair_s: missing for on_failure: shrink") != std::string::npos);
  CHECK(err("reliability: {on_failure: spare, repair_s: 3600}\n").find("reliability.spares: missing") != std::string::npos);
  CHECK(err("reliability: {on_failure: retry}\n").find("reliability.on_failure: unknown 'retry' (allowed: restart, spare or shrink)") != std::string::npos);
  CHECK(err("reliability: {spares: 4}\n").find("reliability.spares: apply to on_failure: spare, not restart") != std::string::npos);
  CHECK(err("reliability: {on_failure: spare, repair_s: 3600, spares: -1}\n").find("reliability.spares") != std::string::npos);
  CHECK(err("reliability: {repair_s: 0}\n").find("reliability.repair_s") != std::string::npos);
  CHECK(err("reliability: {stragglers: {ranks: {0: 0.9}}}\n").find("reliability.stragglers.ranks.0") != std::string::npos);
  CHECK(err("reliability: {stragglers: {spread: 2}}\n").find("reliability.stragglers.spread") != std::string::npos);
  CHECK(err("reliability: {stragglers: {slow: 2}}\n").find("unknown key") != std::string::npos);
  CHECK(err("reliability: {stragglers: {slow_nodes: {share: 0.1, factor: 1.1, pass: backward}}}\n")
            .find("reliability.stragglers.slow_nodes.pass: unknown 'backward'") != std::string::npos);
  CHECK(err("reliability: {checkpoints: {}}\n").find("unknown key") != std::string::npos);
  CHECK(error_of(base, {{"cluster.storage", "{write_GBps: 0}"}}).find("cluster.storage.write_GBps") != std::string::npos);
  for (const std::string section : {"reliability: {failures: sometimes}\n", "reliability: {on_failure: spare}\n"}) {
    const std::string message = err(section);
    CHECK(std::count(message.begin(), message.end(), '\n') == 0);
  }
}
