// The plan search of one scenario point, wired: what `dtsim plan` prints per point and `dtsim compare` keeps the
// best of.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/drivers/cost.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/search/plan_search.hpp"

namespace dtsim::drivers {

enum class Objective { Time, Cost, Energy };
Objective parse_objective(const std::string& text);   // InputError naming --objective
std::string_view to_string(Objective o);

// One ranked plan: the search's figures, and the SimGrid run's where it was confirmed.
struct PlanRow {
  sim::search::Candidate candidate;
  std::optional<nlohmann::json> run;   // run_point's result object on the SimGrid engine
  Accounting accounting;               // the step's energy and cost (the run's step where confirmed)
  double mfu = 0;
  [[nodiscard]] double step() const;
  [[nodiscard]] double objective(Objective o) const;
};

struct PointPlans {
  sim::search::SearchResult search;
  std::vector<PlanRow> rows;           // best first: the confirmed by what SimGrid gave, then the rest
  int gpus = 0;
};

// Searches `s`'s plan, confirms the best `confirm` on the SimGrid engine, keeps the best `top`. Nothing fits:
// InputError naming the nearest plan and the memory it lacks, or, with `nothing_fits_is_error` false, no rows
// (`search.nearest` then names that plan).
PointPlans plan_point(const scenario::Scenario& s, int top, int confirm, Objective objective, bool nothing_fits_is_error = true);

// "no plan of the N fits in memory on G GPUs; the nearest lacks X GiB per GPU" for a search where nothing fits.
std::string nothing_fits_text(const sim::search::SearchResult& r, int gpus);

// The smallest cluster of `s`'s kind (its GPU, machine and fabric) on which some plan of its model fits: 1, 2, 4,
// then whole machines of `s`'s gpus_per_node (up to `most_gpus`), every plan within what `s` fixes tried. The
// scenario of that size (its plan keys left to the search) and the first plan found to fit; nullopt when none
// fits up to `most_gpus`.
struct SmallestCluster {
  scenario::Scenario scenario;
  sim::search::PlanChoice plan;
  int gpus = 0;
};
std::optional<SmallestCluster> smallest_cluster(const scenario::Scenario& s, int most_gpus);

std::string plan_label(const sim::search::PlanChoice& c, int gpus);
// The reason the search dropped most plans for, with its count ("" when none was dropped but for recomputing more).
std::string most_common_reason(std::map<std::string, std::size_t> pruned);
nlohmann::json plan_row_json(const PlanRow& r, int gpus);
// One point's search as `dtsim plan --format json` gives it: {"name", "objective", "plans": plan_row_json each,
// "candidates", "pruned"}.
nlohmann::json plan_json(const scenario::Scenario& s, const PointPlans& p, Objective objective);

}  // namespace dtsim::drivers
