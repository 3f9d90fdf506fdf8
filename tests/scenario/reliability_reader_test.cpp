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

TEST_CASE("reliability: bad values, a rate without its source and what is not modelled yet are one-line errors") {
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
  CHECK(err("reliability: {on_failure: spare}\n").find("reliability.on_failure: not modelled yet") != std::string::npos);
  CHECK(err("reliability: {checkpoints: {}}\n").find("unknown key") != std::string::npos);
  CHECK(error_of(base, {{"cluster.storage", "{write_GBps: 0}"}}).find("cluster.storage.write_GBps") != std::string::npos);
  for (const std::string section : {"reliability: {failures: sometimes}\n", "reliability: {on_failure: spare}\n"}) {
    const std::string message = err(section);
    CHECK(std::count(message.begin(), message.end(), '\n') == 0);
  }
}
