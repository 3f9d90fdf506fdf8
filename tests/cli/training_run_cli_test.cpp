// `run` with a run length: the whole run under failures and checkpoints (DESIGN.md's `training_run`), the Llama 3
// 405B run it is checked on, and its table.
#include "cli/cli_support.hpp"

using namespace cli_support;
using nlohmann::json;

namespace {

json llama3_run(const std::string& args) {
  const auto r = dtsim("run " + src("scenarios/bench/llama3-405b-16384xh100.yaml") +
                       " --set simulation.engine=analytic --format json " + args);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const json j = json::parse(r.out);
  return j.is_array() ? j.at(0) : j;
}

}  // namespace

// Llama 3 (Meta 2024), section 3.3.4: 466 interruptions in 54 days on 16,384 H100 and more than 90 % effective
// training time. The rates are that snapshot's (so the count is a consistency check); the goodput is the model's.
TEST_CASE("training run: Llama 3 405B on 16,384 H100 gets its interruptions a day and more than 90 % goodput") {
  const json row = llama3_run("--set training.tokens=15.6e12");
  REQUIRE(row.contains("training_run"));
  const json& t = row.at("training_run");
  CHECK(t.at("interruptions_per_day").get<double>() == doctest::Approx(466.0 / 54).epsilon(0.2));
  CHECK(t.at("goodput").get<double>() >= 0.90);
  CHECK(t.at("goodput").get<double>() <= 0.93);
  CHECK(t.at("checkpoint_interval_auto").get<bool>());
  // 405.8e9 parameters x (2 B bf16 weight + 4 B fp32 master + 8 B Adam states) at 2 TB/s.
  CHECK(t.at("checkpoint_s").get<double>() == doctest::Approx(405.8e9 * 14 / 2e12).epsilon(0.01));
  // The run holds the cluster longer than its perfect steps, by 1 / goodput.
  const double days = row.at("cost").at("days").get<double>();
  CHECK(t.at("wall_days").get<double>() == doctest::Approx(days / t.at("goodput").get<double>()).epsilon(1e-9));
  CHECK(t.at("total_usd").get<double>() == doctest::Approx(row.at("cost").at("total_usd").get<double>() * t.at("wall_days").get<double>() / days));
  CHECK(t.at("gpu_hours").get<double>() == doctest::Approx(16384 * 24 * t.at("wall_days").get<double>()));
}

TEST_CASE("training run: absent without a run length, and without failures goodput is what checkpoints leave") {
  CHECK_FALSE(llama3_run("").contains("training_run"));
  const json t = llama3_run("--set training.steps=1000 --set reliability.failures=none "
                          "--set reliability.checkpoint.interval_s=600").at("training_run");
  CHECK(t.at("interruptions").get<double>() == 0);
  CHECK(t.at("goodput").get<double>() == doctest::Approx(1 - t.at("checkpoint_overhead").get<double>()));
  CHECK(t.at("lost_work_s").get<double>() == 0);
  // Async checkpoints stop training for the copy to host memory only.
  const json sync = llama3_run("--set training.tokens=15.6e12").at("training_run");
  const json async = llama3_run("--set training.tokens=15.6e12 --set reliability.checkpoint.async=true").at("training_run");
  CHECK(async.at("checkpoint_s").get<double>() < sync.at("checkpoint_s").get<double>());
  // Slower storage: longer checkpoints, a longer optimum interval, less goodput.
  const json slow = llama3_run("--set training.tokens=15.6e12 --set cluster.storage.write_GBps=100").at("training_run");
  CHECK(slow.at("checkpoint_s").get<double>() == doctest::Approx(sync.at("checkpoint_s").get<double>() * 20).epsilon(1e-6));
  CHECK(slow.at("checkpoint_interval_s").get<double>() > sync.at("checkpoint_interval_s").get<double>());
  CHECK(slow.at("goodput").get<double>() < sync.at("goodput").get<double>());
}

TEST_CASE("training run: the table's whole-run block, and reliability refused on a serving scenario") {
  const auto r = dtsim("run " + src("scenarios/bench/llama3-405b-16384xh100.yaml") +
                       " --set simulation.engine=analytic --set training.tokens=15.6e12");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("whole run") != std::string::npos);
  CHECK(r.out.find("(auto)") != std::string::npos);
  const auto serving = dtsim("run " + src("scenarios/serving/llama2-70b-8xh100.yaml") + " --set reliability.restart_s=60");
  CHECK(serving.status == 2);
  CHECK(serving.err.find("reliability") != std::string::npos);
  CHECK(std::count(serving.err.begin(), serving.err.end(), '\n') == 1);
}
