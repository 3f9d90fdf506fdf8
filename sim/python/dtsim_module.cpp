// The compiled half of the Python module `dtsim` (sim/python/dtsim/__init__.py is the other): each function calls
// a driver of the library (sim/drivers/) on a scenario from Python and returns its result objects as Python data,
// the same fields `--format json` prints, converted value by value (no text in between, nothing printed). Bad
// input raises dtsim.InputError (a ValueError) with the program's one-line message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <csignal>
#include <fmt/format.h>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "results/catalog_report.hpp"
#include "results/collective_report.hpp"
#include "results/memory_report.hpp"
#include "results/run_report.hpp"
#include "sim/drivers/common.hpp"
#include "sim/drivers/collective.hpp"
#include "sim/drivers/compare.hpp"
#include "sim/drivers/plan.hpp"
#include "sim/drivers/serving_plan.hpp"
#include "sim/drivers/run.hpp"
#include "sim/drivers/sweep.hpp"
#include "sim/drivers/validate.hpp"
#include "sim/scenario/scenario.hpp"
#include "topology/error.hpp"

namespace py = pybind11;
using nlohmann::json;

namespace {

// A result object as Python data: objects to dicts, arrays to lists, numbers, strings, booleans and null as themselves.
py::object to_python(const json& j) {
  switch (j.type()) {
    case json::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = to_python(v);
      return d;
    }
    case json::value_t::array: {
      py::list l;
      for (const auto& v : j) l.append(to_python(v));
      return l;
    }
    case json::value_t::string: return py::str(j.get<std::string>());
    case json::value_t::boolean: return py::bool_(j.get<bool>());
    case json::value_t::number_integer: return py::int_(j.get<long long>());
    case json::value_t::number_unsigned: return py::int_(j.get<unsigned long long>());
    case json::value_t::number_float: return py::float_(j.get<double>());
    default: return py::none();
  }
}

py::list to_python(const std::vector<json>& rows) {
  py::list out;
  for (const auto& r : rows) out.append(to_python(r));
  return out;
}

std::vector<dtsim::scenario::Scenario> load(const std::optional<std::string>& path, const std::optional<std::string>& text,
                                            const std::vector<std::string>& sets) {
  return dtsim::scenario::load({path.value_or(""), text, sets});
}

bool swept(const std::vector<dtsim::scenario::Scenario>& scenarios) { return scenarios.front().point.index >= 0; }

}  // namespace

PYBIND11_MODULE(_dtsim, m) {
  namespace drivers = dtsim::drivers;
  m.doc() = "dtsim's drivers, each returning its result objects as Python data";
  py::register_exception<dtsim::InputError>(m, "InputError", PyExc_ValueError);
  m.def(
      "run",
      [](const std::optional<std::string>& path, const std::optional<std::string>& text, const std::vector<std::string>& sets,
         bool serving) {
        const auto scenarios = load(path, text, sets);
        if (serving)   // dtsim.serve: checked before anything runs
          for (const auto& s : scenarios)
            if (!s.workload || !s.workload->inference)
              throw dtsim::InputError("inference", "", "missing section: serve simulates serving",
                                      "a scenario with model and inference sections; for a training step, dtsim.run",
                                      s.file);
        return py::make_tuple(to_python(drivers::run(scenarios).rows), swept(scenarios));
      },
      py::arg("path"), py::arg("text"), py::arg("sets"), py::arg("serving"));
  m.def(
      "memory",
      [](const std::optional<std::string>& path, const std::optional<std::string>& text, const std::vector<std::string>& sets) {
        const auto scenarios = load(path, text, sets);
        std::vector<json> rows;
        for (const auto& s : scenarios) rows.push_back(dtsim::results::memory_json(drivers::memory_plan(s)));
        return to_python(rows);
      },
      py::arg("path"), py::arg("text"), py::arg("sets"));
  m.def(
      "plan",
      [](const std::optional<std::string>& path, const std::optional<std::string>& text, const std::vector<std::string>& sets,
         int top, int confirm, const std::string& objective_name) {
        drivers::check_count("top", top, 1);
        drivers::check_count("confirm", confirm, 0);
        const auto objective = drivers::parse_objective(objective_name);
        std::vector<json> points;
        for (const auto& s : load(path, text, sets))
          points.push_back(s.workload && s.workload->inference
                               ? drivers::serving_plan_json(s, drivers::plan_serving(s, top, confirm, objective), objective)
                               : drivers::plan_json(s, drivers::plan_point(s, top, confirm, objective), objective));
        return to_python(points);
      },
      py::arg("path"), py::arg("text"), py::arg("sets"), py::arg("top"), py::arg("confirm"), py::arg("objective"));
  m.def(
      "compare",
      [](const std::optional<std::string>& path, const std::optional<std::string>& text, const std::vector<std::string>& sets,
         int confirm, const std::string& objective_name) {
        drivers::check_count("confirm", confirm, 0);
        return to_python(drivers::compare(load(path, text, sets), confirm, drivers::parse_objective(objective_name)));
      },
      py::arg("path"), py::arg("text"), py::arg("sets"), py::arg("confirm"), py::arg("objective"));
  m.def(
      "collective",
      [](const std::string& gpu, int gpus, const std::string& intra, const std::string& intra_link, int nodes,
         const std::string& inter, const std::string& inter_link, int nics_per_node, const std::string& routing,
         int max_channels, const std::string& op, const std::string& algo, const std::string& min,
         const std::string& max, double step_factor, const std::string& datatype, const std::string& redop, int root) {
        dtsim::drivers::CollectiveOptions a;
        a.gpu = gpu;
        a.gpus = gpus;
        a.intra = intra;
        a.intra_link = intra_link;
        a.nodes = nodes;
        a.inter = inter;
        a.inter_link = inter_link;
        a.nics_per_node = nics_per_node;
        a.routing = routing;
        a.max_channels = max_channels;
        a.op = op;
        a.algo = algo;
        a.min = min;
        a.max = max;
        a.step_factor = step_factor;
        a.datatype = datatype;
        a.redop = redop;
        a.root = root;
        const auto [run, rows] = dtsim::drivers::collective(a);
        return to_python(dtsim::results::collective_json(run, rows));
      },
      py::arg("gpu"), py::arg("gpus"), py::arg("intra"), py::arg("intra_link"), py::arg("nodes"), py::arg("inter"),
      py::arg("inter_link"), py::arg("nics_per_node"), py::arg("routing"), py::arg("max_channels"), py::arg("op"),
      py::arg("algo"), py::arg("min"), py::arg("max"), py::arg("step_factor"), py::arg("datatype"), py::arg("redop"),
      py::arg("root"));
  m.def(
      "sweep",
      [](const std::optional<std::string>& path, const std::optional<std::string>& text, const std::vector<std::string>& sets,
         int jobs, const std::string& out, bool resume) {
        // Silent: the rows go to `out`, nothing is printed.
        const auto r = drivers::sweep(dtsim::scenario::load({path.value_or(""), text, sets}, true), out,
                                      {jobs, {}, resume});
        const int status = r.signal != 0 ? 128 + r.signal : r.lost > 0 ? 1 : 0;
        // Stopped by a signal (Ctrl-C reaches the sweep's own handler, not Python's): raised as Python would.
        if (status == 128 + SIGINT) {
          PyErr_SetNone(PyExc_KeyboardInterrupt);
          throw py::error_already_set();
        }
        if (status != 0)
          throw std::runtime_error(status > 128 ? fmt::format("sweep: stopped by signal {}; the same call with out= and "
                                                              "resume=True finishes it", status - 128)
                                                : "sweep: some points did not finish (their processes died); the same "
                                                  "call with out= and resume=True runs them");
      },
      py::arg("path"), py::arg("text"), py::arg("sets"), py::arg("jobs"), py::arg("out"), py::arg("resume"));
  m.def(
      "validate",
      [](const std::vector<std::string>& files, const std::vector<std::string>& sets, const std::vector<std::string>& only) {
        const auto overrides = dtsim::scenario::parse_sets(sets);
        return to_python(dtsim::results::validation_json(drivers::validate(drivers::validation_sources(files), overrides, only)));
      },
      py::arg("files"), py::arg("sets"), py::arg("only"));
  m.def("catalog", [] { return to_python(dtsim::results::catalog_json()); });
  // Run or sweep rows (as JSON text, from Python's data) as result.csv writes them: dtsim.to_frame's columns.
  m.def(
      "run_csv",
      [](const std::string& rows) { return dtsim::results::run_csv(json::parse(rows).get<std::vector<json>>()); },
      py::arg("rows"));
}
