// `dtsim run` output: one result object per simulated configuration (DESIGN.md's JSON fields), a side-by-side
// table, and CSV rows flattened with dots.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "results/step_metrics.hpp"
#include "workloads/memory_plan.hpp"

namespace dtsim::results {

// What the table and the CSV need beyond the metrics: names, where the configuration came from, references.
struct RunInfo {
  std::string name;
  std::string layout;                             // "1x8 nvswitch (nvlink3)"
  std::string engine;                             // "simgrid" | "analytic"
  std::string network_model;
  std::string collective_algo;
  std::string reference_source;
  std::map<std::string, double> reference;        // result field -> published figure
  nlohmann::json shortcuts = nlohmann::json::object();   // the SimGrid engine's scale shortcuts: what applied
};

// DESIGN.md's result object: step_time_s, tokens_per_s, tflops_per_gpu, hw_tflops_per_gpu, mfu, hfu,
// scaling_efficiency, breakdown_s {compute, exposed_comm, pipeline_bubble, other}, memory, gpus; plus name,
// layout, ideal_time_s, tp_comm_s, tp_comm_bytes, engine, network_model, collective_algo, shortcuts and
// reference.
nlohmann::json run_json(const RunInfo& info, const StepMetrics& m, const workloads::MemoryPlan& memory);

// dtsim's figure for a reference key, in the reference's unit (tp_comm_ms and any X_ms in ms from X_s, *_GB in GB,
// others as the field).
double reference_figure(const nlohmann::json& row, const std::string& key);

// One row per configuration; then, for rows with references, the published figure beside dtsim's.
std::string run_table(const std::vector<nlohmann::json>& rows);

// Header and rows, every field flattened with dots ("breakdown_s.compute"); `scenario`, notes and the roofline's kernel list left out.
std::string run_csv(const std::vector<nlohmann::json>& rows);

// One CSV field of text: quoted (quotes doubled) when it holds a comma, a quote or a line break, and a quote put
// before text that starts with =, +, -, @, a tab or a carriage return (a spreadsheet would run it as a formula). A
// JSON value as a field: null empty, a string as text, anything else as JSON (a negative number stays a number).
std::string csv_field(const std::string& s);
std::string csv_cell(const nlohmann::json& v);

// A table of points' ranked rows (plan's and a serving plan's CSV): the header "name,COLUMNS...", then a row for
// each (point name, row cells) pair, its cells looked up by column (absent: empty).
std::string csv_rows(const std::vector<std::string>& columns,
                     const std::vector<std::pair<std::string, nlohmann::json>>& rows);

}  // namespace dtsim::results
