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

// How many spares to buy: Llama 3's run on a cluster of its own, each failed server out for a day.
TEST_CASE("training run: spares bought against a day's repairs, shrinking instead, and the cost of the spares held") {
  const std::string own = "--set training.tokens=15.6e12 --set reliability.repair_s=86400 ";
  const json pool = llama3_run("--set training.tokens=15.6e12").at("training_run");
  CHECK(pool.at("on_failure") == "restart");
  CHECK(pool.at("repair_wait_s").get<double>() == 0);
  CHECK(pool.at("gpus_held") == 16384);
  // No pool and no spares: every hardware failure waits a day, and the run barely moves.
  CHECK(llama3_run(own).at("training_run").at("goodput").get<double>() < 0.05);
  // About 6.5 servers would be out at a time: with 4 spares the job stands still for Erlang's B(5, 6.5), about 40 %
  // of its time; 16 make it the pool's run, with 128 GPUs more held and paid.
  const json four = llama3_run(own + "--set reliability.on_failure=spare --set reliability.spares=4").at("training_run");
  const json sixteen = llama3_run(own + "--set reliability.on_failure=spare --set reliability.spares=16").at("training_run");
  CHECK(four.at("goodput").get<double>() < 0.6);
  CHECK(four.at("repair_wait_s").get<double>() > 0.35 * 86400 * four.at("wall_days").get<double>());
  CHECK(four.at("repair_wait_s").get<double>() < 0.45 * 86400 * four.at("wall_days").get<double>());
  CHECK(sixteen.at("goodput").get<double>() == doctest::Approx(pool.at("goodput").get<double>()).epsilon(0.002));
  CHECK(sixteen.at("gpus_held") == 16384 + 16 * 8);
  CHECK(sixteen.at("total_usd").get<double>() > pool.at("total_usd").get<double>() * (16384 + 128) / 16384 * 0.999);
  // Shrinking: a server out stops one of the 128 replicas' (TP 8 x PP 16: a replica spans 16 servers) work.
  const json shrink = llama3_run(own + "--set reliability.on_failure=shrink").at("training_run");
  CHECK(shrink.at("shrink_loss_s").get<double>() > 0);
  CHECK(shrink.at("goodput").get<double>() < pool.at("goodput").get<double>());
  CHECK(shrink.at("goodput").get<double>() > four.at("goodput").get<double>());
  // A plan with one replica cannot shrink.
  const auto r = dtsim("run " + src("scenarios/bench/llama3-405b-16384xh100.yaml") +
                       " --set simulation.engine=analytic --set training.tokens=1e12 --set reliability.on_failure=shrink "
                       "--set reliability.repair_s=3600 --set cluster.nodes=16 --set parallelism.dp=1");
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.err.find("reliability.on_failure: leaves nothing to run on") != std::string::npos, r.err);
}
