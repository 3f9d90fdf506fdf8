// The whole run under failures and checkpoints (results/training_run.hpp): Daly's closed form for one failure
// class, the optimum interval against Daly's published figures and Young's first order, the default rates against
// the Llama 3 snapshot they come from.
#include <doctest/doctest.h>

#include <cmath>

#include "results/training_run.hpp"

using namespace dtsim;
using namespace dtsim::results;

TEST_CASE("training run: one failure class gives Daly's expected wall time, and its parts add up") {
  // A GPU failing once every 1,000 hours, 1,000 GPUs: M = 1 h. 100 h of steps, checkpoints of 60 s every 20 min,
  // restarts of 10 min.
  const std::vector<FailureClass> one = {{"gpu", 1e-3, FailureScope::Gpu, "test"}};
  RunInputs in;
  in.work = Seconds(100 * 3600.0);
  in.failures_per_hour = failures_per_hour(one, {1000, 125, 0, 0});
  CHECK(in.failures_per_hour == doctest::Approx(1.0));
  in.checkpoint_block = Seconds(60);
  in.restart = Seconds(600);
  in.interval = Seconds(1200);
  const TrainingRun r = expected_run(in);
  const double m = 3600, wall = m * std::exp(600 / m) * (std::exp((1200 + 60) / m) - 1) * in.work.value() / 1200;
  CHECK(r.wall.value() == doctest::Approx(wall).epsilon(1e-12));
  CHECK(r.goodput == doctest::Approx(in.work.value() / wall));
  CHECK(r.interruptions == doctest::Approx(wall / m));
  CHECK(r.interruptions_per_day == doctest::Approx(24.0));
  CHECK_FALSE(r.interval_auto);
  // Wall time = work + checkpoints + restarts + lost work.
  const double checkpoints = in.work.value() / 1200 * 60;
  CHECK(r.checkpoint_overhead == doctest::Approx(checkpoints / wall));
  CHECK(r.restarts.value() == doctest::Approx(r.interruptions * 600));
  CHECK(in.work.value() + checkpoints + r.restarts.value() + r.lost_work.value() == doctest::Approx(wall));
  // Lost work per failure lies between nothing and a whole interval plus its checkpoint.
  CHECK(r.lost_work.value() / r.interruptions > 0);
  CHECK(r.lost_work.value() / r.interruptions < 1260);
}

TEST_CASE("training run: without failures the run is its work and its checkpoints") {
  RunInputs in;
  in.work = Seconds(3600);
  in.checkpoint_block = Seconds(10);
  in.interval = Seconds(600);
  const TrainingRun r = expected_run(in);
  CHECK(r.wall.value() == doctest::Approx(3600 + 6 * 10));
  CHECK(r.goodput == doctest::Approx(1 - r.checkpoint_overhead));
  CHECK(r.interruptions == 0);
  in.interval.reset();   // auto without failures: one checkpoint, at the end
  CHECK(expected_run(in).wall.value() == doctest::Approx(3610));
}

TEST_CASE("training run: the optimum interval is Daly's, his published figures, and Young's for small checkpoints") {
  // Daly (2006), FGCS 22(3), the figures' captions: delta = 5 min, M = 24 h, 6 h and 15 min give 117, 57 and 9.1 min.
  CHECK(daly_interval(Seconds(300), Seconds(24 * 3600)).value() / 60 == doctest::Approx(116.7).epsilon(0.002));
  CHECK(daly_interval(Seconds(300), Seconds(6 * 3600)).value() / 60 == doctest::Approx(56.7).epsilon(0.002));
  CHECK(daly_interval(Seconds(300), Seconds(15 * 60)).value() / 60 == doctest::Approx(9.14).epsilon(0.002));
  // Young (1974): sqrt(2 delta M), which Daly's approaches as delta / M -> 0.
  const double delta = 3, m = 10 * 3600;
  CHECK(daly_interval(Seconds(delta), Seconds(m)).value() == doctest::Approx(std::sqrt(2 * delta * m)).epsilon(0.01));
  CHECK(daly_interval(Seconds(2 * m), Seconds(m)).value() == m);   // past delta = 2M: M
  // The optimum is the least wall time: an interval a fifth shorter or longer costs more.
  RunInputs in;
  in.work = Seconds(1e6);
  in.failures_per_hour = 1;
  in.checkpoint_block = Seconds(30);
  in.restart = Seconds(300);
  const double best = expected_run(in).wall.value();
  for (const double f : {0.8, 1.2}) {
    in.interval = Seconds(daly_interval(Seconds(30), Seconds(3600)).value() * f);
    CHECK(expected_run(in).wall.value() > best);
  }
}

TEST_CASE("training run: the default rates give back the Llama 3 snapshot they are read from") {
  // 16,384 GPUs, 2,048 servers, 16,384 NICs: 466 interruptions in 54 days.
  const double per_day = 24 * failures_per_hour(default_failure_classes(), {16384, 2048, 16384, 0});
  CHECK(per_day == doctest::Approx(466.0 / 54));
  for (const auto& c : default_failure_classes()) {
    CAPTURE(c.component);
    CHECK(c.per_hour > 0);
    CHECK(c.source.find("Llama 3") != std::string::npos);
  }
  // An 8-GPU server fails about every 49 days by these rates: 2,048 times as rarely as the whole cluster.
  const double server_days = 1 / (24 * failures_per_hour(default_failure_classes(), {8, 1, 8, 0}));
  CHECK(server_days == doctest::Approx(54.0 * 2048 / 466).epsilon(1e-9));
}

TEST_CASE("training run: a sampled run is the same for the same seed, and its mean over seeds is Daly's expectation") {
  const std::vector<FailureClass> classes = {{"gpu", 1e-3, FailureScope::Gpu, "test"},
                                             {"host", 2e-3, FailureScope::Node, "test"}};
  const ClusterCounts counts{800, 100, 0, 0};   // 0.8 + 0.2 failures an hour: M = 1 h
  RunInputs in;
  in.work = Seconds(500 * 3600.0);
  in.failures_per_hour = failures_per_hour(classes, counts);
  in.checkpoint_block = Seconds(60);
  in.restart = Seconds(600);
  const TrainingRun expected = expected_run(in);
  const SampledRun a = sample_run(in, expected, classes, counts, 42);
  CHECK(sampled_run_json(a).dump() == sampled_run_json(sample_run(in, expected, classes, counts, 42)).dump());
  CHECK(sampled_run_json(a).dump() != sampled_run_json(sample_run(in, expected, classes, counts, 43)).dump());
  // Each failure names a class, in proportion to its share of the rate (0.8 : 0.2), and loses less than an interval.
  double gpu = 0;
  for (const auto& f : a.failures) {
    gpu += f.component == "gpu" ? 1 : 0;
    CHECK(f.lost_s <= expected.interval.value() + 1e-9);
  }
  CHECK(gpu / static_cast<double>(a.failures.size()) == doctest::Approx(0.8).epsilon(0.1));
  // Daly's form is exact for this process: 40 runs of about 540 failures each average to it within half a percent.
  double sum = 0;
  constexpr unsigned long long kRuns = 40;
  for (unsigned long long seed = 0; seed < kRuns; ++seed) sum += sample_run(in, expected, classes, counts, seed).wall.value();
  CHECK(sum / kRuns == doctest::Approx(expected.wall.value()).epsilon(0.005));
  // Without failures a sampled run is the expected one.
  in.failures_per_hour = 0;
  const TrainingRun perfect = expected_run(in);
  CHECK(sample_run(in, perfect, {}, counts, 1).wall.value() == doctest::Approx(perfect.wall.value()));
}

namespace {

// A server class failing 1e-3 an hour on 100 servers (0.1 an hour, 2.4 a day) and a software class as often;
// 2,000 hours of steps; checkpoints of 60 s; restarts of 10 min. Each failed server is out for `repair_h` hours.
RunInputs recovery_case(const std::vector<FailureClass>& classes, const ClusterCounts& counts, OnFailure mode,
                        double repair_h) {
  RunInputs in;
  in.work = Seconds(2000 * 3600.0);
  in.failures_per_hour = failures_per_hour(classes, counts);
  in.repair_failures_per_hour = failures_per_hour(classes, counts, true);
  in.checkpoint_block = Seconds(60);
  in.restart = Seconds(600);
  in.recovery.mode = mode;
  in.recovery.repair = Seconds(repair_h * 3600);
  in.recovery.dp = 50;
  in.recovery.replicas_per_server = 1;
  return in;
}

double mean_sampled(const RunInputs& in, const std::vector<FailureClass>& classes, const ClusterCounts& counts) {
  const TrainingRun expected = expected_run(in);
  double sum = 0;
  constexpr unsigned long long kRuns = 40;
  for (unsigned long long seed = 0; seed < kRuns; ++seed) sum += sample_run(in, expected, classes, counts, seed).wall.value();
  return sum / kRuns;
}

const std::vector<FailureClass> kServerAndSoftware = {{"host", 1e-3, FailureScope::Node, "test", true},
                                                      {"software", 1e-3 / 8, FailureScope::Gpu, "test", false}};
const ClusterCounts kCounts{800, 100, 0, 0};

}  // namespace

TEST_CASE("training run: on_failure restart waits for the repair only without a pool, only for what takes a server out") {
  RunInputs pool = recovery_case(kServerAndSoftware, kCounts, OnFailure::Restart, 10);
  pool.recovery.repair.reset();   // the facility replaces the server at once
  RunInputs own = recovery_case(kServerAndSoftware, kCounts, OnFailure::Restart, 10);
  CHECK(own.repair_failures_per_hour == doctest::Approx(0.1));
  CHECK(own.failures_per_hour == doctest::Approx(0.2));
  // Daly's form with the mean restart: half the failures wait 10 h more.
  const TrainingRun a = expected_run(pool), b = expected_run(own);
  const double m = 3600 / 0.2, tau = a.interval.value();
  const auto daly = [&](double r) { return m * std::exp(r / m) * std::expm1((tau + 60) / m) * own.work.value() / tau; };
  CHECK(a.wall.value() == doctest::Approx(daly(600)).epsilon(1e-12));
  CHECK(b.wall.value() == doctest::Approx(daly(600 + 0.5 * 36000)).epsilon(1e-12));
  CHECK(b.repair_wait.value() == doctest::Approx(b.interruptions * 0.5 * 36000));
  // The sampled runs agree with the expectations.
  CHECK(mean_sampled(pool, kServerAndSoftware, kCounts) == doctest::Approx(a.wall.value()).epsilon(0.005));
  CHECK(mean_sampled(own, kServerAndSoftware, kCounts) == doctest::Approx(b.wall.value()).epsilon(0.03));
}

TEST_CASE("training run: spares stand in for servers in repair, and the job waits when they run out") {
  // 0.1 server failures an hour, 20 h repairs: 2 servers out on average.
  RunInputs in = recovery_case(kServerAndSoftware, kCounts, OnFailure::Spare, 20);
  in.recovery.spares = 2;
  const TrainingRun two = expected_run(in);
  // Servers fail only while the job runs, so it stops at 3 out: Erlang's B(3, 2) = (8/6) / (1 + 2 + 2 + 8/6) of
  // its time.
  const double stalled = (8.0 / 6) / (1 + 2 + 2 + 8.0 / 6);
  CHECK(two.repair_wait.value() / two.wall.value() == doctest::Approx(stalled).epsilon(1e-9));
  CHECK(mean_sampled(in, kServerAndSoftware, kCounts) == doctest::Approx(two.wall.value()).epsilon(0.03));
  // Enough spares are the facility's pool.
  in.recovery.spares = 40;
  RunInputs pool = recovery_case(kServerAndSoftware, kCounts, OnFailure::Restart, 20);
  pool.recovery.repair.reset();
  CHECK(expected_run(in).wall.value() == doctest::Approx(expected_run(pool).wall.value()).epsilon(1e-9));
  CHECK(mean_sampled(in, kServerAndSoftware, kCounts) == doctest::Approx(expected_run(pool).wall.value()).epsilon(0.005));
}

TEST_CASE("training run: a shrinking job runs narrower while servers are out, and pays a restart to grow back") {
  RunInputs in = recovery_case(kServerAndSoftware, kCounts, OnFailure::Shrink, 20);
  const TrainingRun r = expected_run(in);
  RunInputs pool = recovery_case(kServerAndSoftware, kCounts, OnFailure::Restart, 20);
  pool.recovery.repair.reset();
  const double base = expected_run(pool).wall.value();
  // 2 servers out on average of 50 replicas: 4 % slower; every repair adds a restart to rejoin.
  const double speed = 1 - 2.0 / 50, rejoin = 0.1 / 3600 * 600;
  CHECK(r.wall.value() == doctest::Approx(base / speed / (1 - rejoin)).epsilon(1e-6));
  CHECK(r.shrink_loss.value() == doctest::Approx(base / speed - base).epsilon(1e-6));
  CHECK(mean_sampled(in, kServerAndSoftware, kCounts) == doctest::Approx(r.wall.value()).epsilon(0.03));
}
