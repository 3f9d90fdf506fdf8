// `dtsim plan` as a user runs it: the ranked plans, the SimGrid confirmation of the best, time, cost and energy
// beside each, the files of --out, and the answers to bad input (one line, exit 2); `dtsim compare` over clusters.
#include "cli/plan_test_support.hpp"

#include <fmt/format.h>

using namespace cli_support;
using nlohmann::json;

using plan_test_support::small_scenario;

TEST_CASE("plan: the best plans ranked, the first confirmed on the SimGrid engine, with time, cost and energy") {
  const auto r = dtsim("plan " + small_scenario("rank").string() + " --top 4 --confirm 2 --format json");
  REQUIRE(r.status == 0);
  const json j = json::parse(r.out);
  CHECK(j.at("candidates").get<int>() > 100);
  CHECK(j.at("objective") == "time");
  const auto& plans = j.at("plans");
  REQUIRE(plans.size() == 4);
  CHECK(plans[0].at("confirmed") == true);
  CHECK(plans[1].at("confirmed") == true);
  CHECK(plans[2].at("confirmed") == false);
  CHECK(plans[0].at("step_time_s").get<double>() <= plans[1].at("step_time_s").get<double>());
  // Confirmed: SimGrid's time differs from the screen's; unconfirmed: the screen's time.
  CHECK(plans[2].at("step_time_s") == plans[2].at("analytic_step_time_s"));
  CHECK(plans[2].at("analytic_step_time_s").get<double>() <= plans[3].at("analytic_step_time_s").get<double>());
  for (const auto& p : plans) {
    CHECK(p.at("fits") == true);
    CHECK(p.at("margin_bytes").get<double>() >= 0);
    const int gpus = p["parallelism"]["tp"].get<int>() * p["parallelism"]["pp"].get<int>() * p["parallelism"]["dp"].get<int>();
    CHECK(gpus == 8);
    CHECK(p["parallelism"].contains("order"));
    // 1e9 tokens at 32 x 2048 tokens a step: 15,259 steps (rounded up); days and GPU-hours from them.
    const double steps = p["cost"]["steps"].get<double>();
    CHECK(steps == 15259);
    const double step = p.at("step_time_s").get<double>();
    CHECK(p["cost"]["days"].get<double>() == doctest::Approx(steps * step / 86400));
    CHECK(p["cost"]["gpu_hours"].get<double>() == doctest::Approx(steps * step * 8 / 3600));
    CHECK(p["cost"]["total_usd"].get<double>() == doctest::Approx(p["cost"]["gpu_hours"].get<double>() * 1.8));
    CHECK(p["energy"]["total_MWh"].get<double>() == doctest::Approx(p["energy"]["step_J"].get<double>() * steps / 3.6e9));
    CHECK(p.at("mfu").get<double>() > 0.2);
    CHECK(p.at("mfu").get<double>() < 1.0);
  }
  // Every candidate is accounted for: fitting or dropped for a reason.
  std::size_t dropped = 0;
  for (const auto& [why, n] : j.at("pruned").items()) dropped += n.get<std::size_t>();
  CHECK(dropped < j.at("candidates").get<std::size_t>());
}

TEST_CASE("plan: the table says why the winner wins, and --out writes plans.json and plans.csv") {
  const fs::path s = small_scenario("out");
  const fs::path out = s.parent_path() / "out";
  const auto r = dtsim("plan " + s.string() + " --top 3 --confirm 2 --out " + out.string());
  REQUIRE(r.status == 0);
  CHECK(r.out.find("candidate plans on 8 GPUs") != std::string::npos);
  CHECK(r.out.find("why #1 wins") != std::string::npos);
  CHECK(r.out.find("#2   compute") != std::string::npos);
  const json j = json::parse(slurp(out / "plans.json"));
  CHECK(j.at("plans").size() == 3);
  const std::string csv = slurp(out / "plans.csv");
  CHECK(csv.starts_with("name,rank,tp,pp,dp,vpp,zero,order,micro_batch,recompute,sequence_parallel"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
  const auto again = dtsim("plan " + s.string() + " --top 3 --confirm 0 --format csv");
  REQUIRE(again.status == 0);
  CHECK(std::count(again.out.begin(), again.out.end(), '\n') == 4);
  // Only #1 confirmed: its SimGrid figure is not set against #2's analytic one as if from one engine.
  const auto one = dtsim("plan " + s.string() + " --top 3 --confirm 1");
  REQUIRE(one.status == 0);
  CHECK(one.out.find("why #1 wins") == std::string::npos);
  CHECK(one.out.find("why #1 is first: the analytic engine ranked it first (") != std::string::npos);
  CHECK(one.out.find("#2 was not run on the SimGrid engine (") != std::string::npos);
  CHECK(one.out.find("--confirm 2 compares the two on one engine") != std::string::npos);
}

TEST_CASE("plan: ranked by energy, the confirmed plans are in order of their energy a step") {
  const auto r = dtsim("plan " + small_scenario("energy").string() + " --top 3 --confirm 3 --objective energy --format json");
  REQUIRE(r.status == 0);
  const json j = json::parse(r.out);
  CHECK(j.at("objective") == "energy");
  const auto& plans = j.at("plans");
  REQUIRE(plans.size() == 3);
  CHECK(plans[0]["energy"]["step_J"].get<double>() <= plans[1]["energy"]["step_J"].get<double>());
  CHECK(plans[1]["energy"]["step_J"].get<double>() <= plans[2]["energy"]["step_J"].get<double>());
}

TEST_CASE("plan: what the scenario fixes is not searched") {
  const auto r = dtsim("plan " + small_scenario("fixed", "parallelism: {tp: 2}\n").string() + " --top 50 --confirm 0 --format json");
  REQUIRE(r.status == 0);
  const json doc = json::parse(r.out);   // not a range over a temporary's member: it was freed before the loop ran
  for (const auto& p : doc.at("plans")) CHECK(p["parallelism"]["tp"] == 2);
}

TEST_CASE("plan: nothing fits names the nearest plan and the memory it lacks, and bad options and prices exit 2") {
  const fs::path dir = fresh_dir("plan", "nofit");
  fs::create_directories(dir);
  std::ofstream(dir / "big.yaml") << "cluster: {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                                     "model: {preset: gpt3-175b}\n"
                                     "training: {global_batch: 8}\n";
  const auto none = dtsim("plan " + (dir / "big.yaml").string());
  CHECK(none.status == 2);
  CHECK(none.out.empty());
  CHECK(std::count(none.err.begin(), none.err.end(), '\n') == 1);
  CHECK(none.err.find("no plan of the") != std::string::npos);
  CHECK(none.err.find("the nearest lacks") != std::string::npos);
  CHECK(none.err.find("GiB per GPU") != std::string::npos);
  CHECK(none.err.find("tp ") != std::string::npos);

  const fs::path s = small_scenario("bad");
  const auto objective = dtsim("plan " + s.string() + " --objective money");
  CHECK(objective.status == 2);
  CHECK(objective.err == "dtsim: error: --objective: unknown objective 'money' (allowed: time, cost, energy)\n");
  const auto top = dtsim("plan " + s.string() + " --top 0");
  CHECK(top.status == 2);
  CHECK(top.err.find("--top") != std::string::npos);
  const auto price = dtsim("plan " + s.string() + " --set cost.gpu_hour_usd=-1");
  CHECK(price.status == 2);
  CHECK(price.err.find("cost.gpu_hour_usd") != std::string::npos);
  CHECK(std::count(price.err.begin(), price.err.end(), '\n') == 1);
}

// Three cluster options for GPT 1.7B, and one on which it cannot train: a row each, the Pareto front by hand.
TEST_CASE("compare: one row per cluster with its best plan, the Pareto front, a cluster that does not fit, the chart") {
  const fs::path dir = fresh_dir("compare", "four");
  const std::string c = written(dir, "c.yaml",
      "name: gpt-1.7b\n"
         "cluster: {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra: nvswitch}\n"
         "model: {preset: gpt-1.7b}\n"
         "training: {global_batch: 32, tokens: 1e9}\n"
         "sweep:\n"
         "  zip:\n"
         "    name: [a100-nvswitch, h100-nvswitch, a100-pcie, l4-one]\n"
         "    cluster:\n"
         "      - {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra: nvswitch}\n"
         "      - {gpu: h100-sxm5-80gb, gpus_per_node: 8, intra: nvswitch}\n"
         "      - {gpu: a100-pcie-80gb, gpus_per_node: 8, intra: pcie}\n"
         "      - {gpu: l4, gpus_per_node: 1}\n");
  const fs::path out = dir / "out";
  const auto r = dtsim("compare " + c + " --confirm 1 --format json --out " + out.string());
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const json j = json::parse(r.out);
  CHECK(j.at("objective") == "time");
  CHECK(j.at("axes").at("time") == "days");
  const auto& rows = j.at("clusters");
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].at("name") == "a100-nvswitch");
  CHECK(rows[3].at("fits") == false);
  CHECK(rows[3].at("why").get<std::string>().find("the nearest lacks") != std::string::npos);
  CHECK(rows[3].at("lacks_bytes").get<double>() > 0);
  CHECK(rows[3].at("pareto") == false);
  // The front, by hand, on the whole run (failures and checkpoints included): a row is on it unless another is no
  // slower, no dearer and better in one.
  for (const auto& a : rows) {
    if (!a.at("fits").get<bool>()) continue;
    CHECK(a["plan"].at("confirmed") == true);
    CHECK(a.at("capital_usd").get<double>() > 0);
    REQUIRE(a["plan"].contains("training_run"));
    const json& ra = a["plan"]["training_run"];
    CHECK(ra["wall_days"].get<double>() > a["plan"]["cost"]["days"].get<double>());
    const double ta = ra["wall_days"].get<double>(), ca = ra["total_usd"].get<double>();
    bool dominated = false;
    for (const auto& b : rows) {
      if (&a == &b || !b.at("fits").get<bool>()) continue;
      const double tb = b["plan"]["training_run"]["wall_days"].get<double>(),
                   cb = b["plan"]["training_run"]["total_usd"].get<double>();
      dominated = dominated || (tb <= ta && cb <= ca && (tb < ta || cb < ca));
    }
    CHECK(a.at("pareto").get<bool>() == !dominated);
  }
  // H100 over NVSwitch is the fastest of the four: on the front whatever it costs.
  CHECK(rows[1].at("pareto") == true);
  CHECK(rows[1]["plan"]["cost"]["days"].get<double>() < rows[0]["plan"]["cost"]["days"].get<double>());
  // The same best plan as `plan` finds for that cluster alone.
  std::ofstream(dir / "one.yaml") << "name: a100-nvswitch\n"
                                     "cluster: {gpu: a100-sxm4-80gb, gpus_per_node: 8, intra: nvswitch}\n"
                                     "model: {preset: gpt-1.7b}\n"
                                     "training: {global_batch: 32, tokens: 1e9}\n";
  const auto alone = dtsim("plan " + (dir / "one.yaml").string() + " --top 1 --confirm 1 --format json");
  REQUIRE(alone.status == 0);
  CHECK(json::parse(alone.out)["plans"][0]["parallelism"] == rows[0]["plan"]["parallelism"]);
  CHECK(json::parse(alone.out)["plans"][0]["training"] == rows[0]["plan"]["training"]);
  // --out: compare.json and compare.csv, and `report` draws the time-cost chart from them.
  CHECK(json::parse(slurp(out / "compare.json")) == j);
  const std::string csv = slurp(out / "compare.csv");
  CHECK(csv.starts_with("name,cluster,gpus,fits,pareto,tp,pp,dp"));
  CHECK(csv.find(",goodput,wall_days,run_total_usd,why\n") != std::string::npos);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 5);
  const auto report = dtsim("report " + out.string());
  REQUIRE_MESSAGE(report.status == 0, report.err);
  CHECK(fs::file_size(out / "plots" / "time_cost.png") > 1000);
  const std::string md = slurp(out / "report.md");
  CHECK(md.find("does not fit") != std::string::npos);
  CHECK(md.find("plots/time_cost.png") != std::string::npos);
  // The table: a row per cluster, the front starred.
  const auto table = dtsim("compare " + c + " --confirm 0");
  REQUIRE(table.status == 0);
  CHECK(table.out.find("* h100-nvswitch") != std::string::npos);
  CHECK(table.out.find("l4-one") != std::string::npos);
  const auto bad = dtsim("compare " + c + " --objective speed");
  CHECK(bad.status == 2);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
}

// Issue 19's "must not miss good plans", on SC'21 table 1's first row (bench/sc21-planner runs every row): the
// planner's best plan for the same model, GPUs, global batch and software is at least as fast in dtsim as the
// published plan.
TEST_CASE("plan: on SC'21 table 1's 1.7B row, the best plan found is at least as fast as the published plan"
          * doctest::test_suite("figures")) {
  const fs::path dir = fresh_dir("plan", "sc21");
  fs::create_directories(dir);
  const std::string row = "name: 1.7b-32\n"
                          "cluster: {gpu: a100-sxm4-80gb, nodes: 4, gpus_per_node: 8, intra: nvswitch, inter: fat-tree,\n"
                          "          inter_link: ib-hdr, nics_per_node: 8, fabric: {leaf_ports: 64}}\n"
                          "model: {preset: gpt-1.7b}\n"
                          "training: {framework: megatron-2021, global_batch: 512, precision: fp16, grad_dtype: fp16,\n"
                          "           dp_overlap: true";
  std::ofstream(dir / "open.yaml") << row << "}\n";
  std::ofstream(dir / "published.yaml") << row << ", micro_batch: 16, recompute: full}\n"
                                        << "parallelism: {tp: 1, pp: 1}\n";
  const auto published = dtsim("run " + (dir / "published.yaml").string() + " --format json");
  REQUIRE_MESSAGE(published.status == 0, published.err);
  const json p = json::parse(published.out);
  // The row as written here is the validation table's row: the same hardware TFLOP/s as validate gives for it.
  const auto validate = dtsim("validate " + src("scenarios/validation/megatron-sc21-table1.yaml") +
                              " --only 1.7b-32 --format json");
  REQUIRE_MESSAGE(validate.status == 0, validate.err);
  const json v = json::parse(validate.out)["tables"][0]["rows"][0];
  CHECK(v["figure"] == "hw_tflops_per_gpu");
  CHECK(v["dtsim"].get<double>() == doctest::Approx(p["hw_tflops_per_gpu"].get<double>()).epsilon(1e-9));
  const auto planned = dtsim("plan " + (dir / "open.yaml").string() + " --top 1 --confirm 3 --format json");
  REQUIRE_MESSAGE(planned.status == 0, planned.err);
  const json best = json::parse(planned.out)["plans"][0];
  CHECK(best["confirmed"] == true);
  CHECK(best["step_time_s"].get<double>() <= p["step_time_s"].get<double>());
}

// `run` and `topo` with prices: DESIGN.md's cost, energy and bill_of_materials objects, ownership over the bill,
// part prices overridden, and the bad prices and unpriced bills that exit 2 with one line.
TEST_CASE("run and topo: cost and energy objects, ownership priced from the bill of materials, overrides and bad prices") {
  const fs::path dir = fresh_dir("plan", "own");
  const std::string own = written(dir, "own.yaml",
      "name: own\n"
         "cluster: {gpu: a100-sxm4-80gb, nodes: 2, gpus_per_node: 8, intra: nvswitch, inter: fat-tree, inter_link: ib-hdr}\n"
         "model: {preset: gpt-1.7b}\n"
         "training: {global_batch: 32, micro_batch: 1, steps: 1000}\n"
         "parallelism: {tp: 1}\n"
         "simulation: {engine: analytic}\n"
         "cost: {mode: ownership, years: 4, kwh_usd: 0.1, pue: 1.5}\n");
  const auto topo = dtsim("topo " + own + " --format json");
  REQUIRE_MESSAGE(topo.status == 0, topo.err);
  const json bom = json::parse(topo.out).at("bill_of_materials");
  double sum = 0;
  for (const auto& item : bom.at("items")) {
    CHECK(item.at("total_usd").get<double>() == doctest::Approx(item.at("count").get<double>() * item.at("unit_usd").get<double>()));
    sum += item.at("total_usd").get<double>();
  }
  CHECK(bom.at("total_usd").get<double>() == doctest::Approx(sum));
  // 16 GPUs, 2 servers, 16 HDR NICs on one 40-port switch, copper in the rack.
  const auto count = [&](const std::string& kind) {
    double n = 0;
    for (const auto& item : bom.at("items")) if (item.at("kind") == kind) n += item.at("count").get<double>();
    return n;
  };
  CHECK(count("gpu") == 16);
  CHECK(count("server") == 2);
  CHECK(count("nic") == 16);
  CHECK(count("switch") == 1);
  CHECK(count("cable") == 16);

  const auto run = dtsim("run " + own + " --format json");
  REQUIRE_MESSAGE(run.status == 0, run.err);
  const json r = json::parse(run.out);
  const json& cost = r.at("cost");
  const json& energy = r.at("energy");
  CHECK(cost.at("mode") == "ownership");
  CHECK(cost.at("capital_usd").get<double>() == doctest::Approx(bom.at("total_usd").get<double>()));
  CHECK(cost.at("steps").get<double>() == 1000);
  const double run_s = 1000 * r.at("step_time_s").get<double>();
  CHECK(cost.at("days").get<double>() == doctest::Approx(run_s / 86400));
  // Capital for the run's time over 4 years, plus the facility's energy (PUE 1.5) at 0.1 USD per kWh.
  const double kwh = energy.at("total_MWh").get<double>() * 1000;
  CHECK(energy.at("step_J").get<double>() == doctest::Approx(1.5 * energy.at("it_step_J").get<double>()));
  CHECK(cost.at("total_usd").get<double>() ==
        doctest::Approx(bom.at("total_usd").get<double>() * run_s / (4 * 365.25 * 86400) + 0.1 * kwh));
  CHECK(energy.at("per_token_J").get<double>() == doctest::Approx(energy.at("step_J").get<double>() / (32 * 2048)));
  // A part's price overridden: the capital moves by the difference.
  const auto cheaper = dtsim("run " + own + " --set 'cost.parts={quantum-qm8700: {usd: 1}}' --format json");
  REQUIRE_MESSAGE(cheaper.status == 0, cheaper.err);
  const double switch_usd = [&] {
    for (const auto& item : bom.at("items")) if (item.at("kind") == "switch") return item.at("unit_usd").get<double>();
    return 0.0;
  }();
  CHECK(json::parse(cheaper.out)["cost"]["capital_usd"].get<double>() ==
        doctest::Approx(bom.at("total_usd").get<double>() - switch_usd + 1));
  // Bad input: one line, exit 2.
  for (const std::string bad : {"--set cost.kwh_usd=-1", "--set cost.gpu_hour_usd=-2", "--set cost.mode=lease",
                                 "--set 'cost.parts={nope: {usd: 1}}'", "--set cluster.inter_link=opa-100",
                                 "--set training.tokens=1e9"}) {
    const auto e = dtsim("run " + own + " " + bad);
    CHECK_MESSAGE(e.status == 2, bad);
    CHECK_MESSAGE(std::count(e.err.begin(), e.err.end(), '\n') == 1, (bad + ": " + e.err));
  }
  // An Omni-Path bill has no catalog NIC or switch: rental prices it, ownership cannot.
  const auto opa = dtsim("run " + own + " --set cluster.inter_link=opa-100");
  CHECK(opa.err.find("cost.mode") != std::string::npos);
  CHECK(dtsim("run " + own + " --set cluster.inter_link=opa-100 --set cost.mode=rental").status == 0);
}

// Each candidate takes its framework's defaults for its own plan: DeepSpeed overlaps the gradient reduction under
// ZeRO-3 only, so a ZeRO-3 candidate searched from a scenario that leaves zero open times as the same plan written.
// And the search tries only the interleavings the framework runs.
TEST_CASE("plan: framework defaults per candidate (DeepSpeed's overlap), and only the interleavings it runs") {
  const fs::path dir = fresh_dir("plan", "framework-defaults");
  fs::create_directories(dir);
  std::ofstream(dir / "ds.yaml") << "name: ds\n"
                                    "cluster: {gpu: h100-sxm5-80gb, nodes: 2, gpus_per_node: 8, intra: nvswitch,\n"
                                    "  inter: fat-tree, inter_link: ib-ndr}\n"
                                    "model: {preset: llama3-8b}\n"
                                    "training: {framework: deepspeed, global_batch: 64}\n"
                                    "parallelism: {tp: 1, pp: 1}\nsimulation: {engine: analytic}\n";
  const auto plans = [&](const std::string& file, const std::string& sets) {
    const auto r = dtsim("plan " + (dir / file).string() + " --confirm 0 --top 50 --format json" + sets);
    REQUIRE_MESSAGE(r.status == 0, r.err);
    return json::parse(r.out).at("plans");
  };
  const auto key = [](const json& p) {
    return fmt::format("{} {} {}", p["parallelism"]["zero"].get<int>(), p["training"]["micro_batch"].get<int>(),
                       p["training"]["recompute"].get<std::string>());
  };
  const json open = plans("ds.yaml", "");
  const json three = plans("ds.yaml", " --set parallelism.zero=3");
  REQUIRE(!three.empty());
  int compared = 0;
  for (const auto& p : open)
    for (const auto& q : three)
      if (p["parallelism"]["zero"] == 3 && key(p) == key(q)) {
        CHECK(p.at("analytic_step_time_s").get<double>() == doctest::Approx(q.at("analytic_step_time_s").get<double>()));
        ++compared;
      }
  CHECK(compared > 0);
  // Written, under its old name too, the overlap is kept for every candidate: the ZeRO-3 plan then runs slower.
  std::ofstream(dir / "off.yaml") << "name: off\n"
                                     "cluster: {gpu: h100-sxm5-80gb, nodes: 2, gpus_per_node: 8, intra: nvswitch,\n"
                                     "  inter: fat-tree, inter_link: ib-ndr}\n"
                                     "model: {preset: llama3-8b}\n"
                                     "training: {framework: deepspeed, global_batch: 64, dp_overlap: false}\n"
                                     "parallelism: {tp: 1, pp: 1}\nsimulation: {engine: analytic}\n";
  const auto zero3_time = [&](const json& ranked) {
    for (const auto& p : ranked)
      if (key(p) == key(three.front())) return p.at("analytic_step_time_s").get<double>();
    return 0.0;
  };
  CHECK(zero3_time(plans("off.yaml", "")) > zero3_time(open));
  // 14 layers on 4 stages: Megatron-Core interleaves them unequally, Megatron-LM 2022 and DeepSpeed not at all.
  std::ofstream(dir / "pp.yaml") << "name: pp\ncluster: {preset: dgx-h100}\n"
                                    "model: {layers: 14, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 32000, "
                                    "seq_length: 4096}\n"
                                    "training: {global_batch: 16}\nparallelism: {tp: 2, pp: 4}\n"
                                    "simulation: {engine: analytic}\n";
  const auto deepest = [&](const std::string& framework) {
    int most = 0;
    for (const auto& p : plans("pp.yaml", " --set training.framework=" + framework))
      most = std::max(most, p["parallelism"]["vpp"].get<int>());
    return most;
  };
  CHECK(deepest("megatron-core") > 1);
  CHECK(deepest("megatron-2022") == 1);
  CHECK(deepest("deepspeed") == 1);
  fs::remove_all(dir);
}
