// The compiled half of the Python module `dtsim` (sim/python/dtsim/__init__.py is the other): each function runs one
// of the program's commands with --format json on arguments from Python and returns the JSON it printed, as text,
// so Python gets exactly the fields the program writes. Bad input raises dtsim.InputError (a ValueError) with the
// program's one-line message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <csignal>
#include <fmt/format.h>
#include <iostream>
#include <stdexcept>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/commands.hpp"
#include "topology/error.hpp"

namespace py = pybind11;
using dtsim::cli::Format;

namespace {

// Runs `command` with std::cout captured: what it printed.
template <class Fn>
std::string captured(Fn command) {
  std::ostringstream out;
  std::streambuf* was = std::cout.rdbuf(out.rdbuf());
  try {
    command();
  } catch (...) {
    std::cout.rdbuf(was);
    throw;
  }
  std::cout.rdbuf(was);
  return out.str();
}

dtsim::cli::ScenarioArgs scenario_args(const std::optional<std::string>& path, const std::optional<std::string>& text,
                                       const std::vector<std::string>& sets) {
  dtsim::cli::ScenarioArgs a;
  a.file = path.value_or("");
  a.text = text;
  a.sets = sets;
  a.format = Format::Json;
  return a;
}

}  // namespace

PYBIND11_MODULE(_dtsim, m) {
  m.doc() = "dtsim's commands, each returning the JSON the program prints with --format json";
  py::register_exception<dtsim::InputError>(m, "InputError", PyExc_ValueError);
  m.def(
      "run",
      [](const std::optional<std::string>& path, const std::optional<std::string>& text, const std::vector<std::string>& sets) {
        return captured([&] { dtsim::cli::run_command(scenario_args(path, text, sets), {}); });
      },
      py::arg("path"), py::arg("text"), py::arg("sets"));
  m.def(
      "memory",
      [](const std::optional<std::string>& path, const std::optional<std::string>& text, const std::vector<std::string>& sets) {
        return captured([&] { dtsim::cli::memory_command(scenario_args(path, text, sets)); });
      },
      py::arg("path"), py::arg("text"), py::arg("sets"));
  m.def(
      "plan",
      [](const std::optional<std::string>& path, const std::optional<std::string>& text, const std::vector<std::string>& sets,
         int top, int confirm, const std::string& objective) {
        dtsim::cli::PlanArgs plan;
        plan.top = top;
        plan.confirm = confirm;
        plan.objective = objective;
        return captured([&] { dtsim::cli::plan_command(scenario_args(path, text, sets), plan); });
      },
      py::arg("path"), py::arg("text"), py::arg("sets"), py::arg("top"), py::arg("confirm"), py::arg("objective"));
  m.def(
      "collective",
      [](const std::string& gpu, int gpus, const std::string& intra, const std::string& intra_link, int nodes,
         const std::string& inter, const std::string& inter_link, int nics_per_node, const std::string& routing,
         int max_channels, const std::string& op, const std::string& algo, const std::string& min,
         const std::string& max, double step_factor, const std::string& datatype, const std::string& redop, int root) {
        dtsim::cli::CollectiveArgs a;
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
        a.format = Format::Json;
        return captured([&] { dtsim::cli::collective_command(a); });
      },
      py::arg("gpu"), py::arg("gpus"), py::arg("intra"), py::arg("intra_link"), py::arg("nodes"), py::arg("inter"),
      py::arg("inter_link"), py::arg("nics_per_node"), py::arg("routing"), py::arg("max_channels"), py::arg("op"),
      py::arg("algo"), py::arg("min"), py::arg("max"), py::arg("step_factor"), py::arg("datatype"), py::arg("redop"),
      py::arg("root"));
  m.def(
      "sweep",
      [](const std::optional<std::string>& path, const std::optional<std::string>& text, const std::vector<std::string>& sets,
         int jobs, const std::string& out, bool resume) {
        dtsim::cli::SweepArgs sweep;
        sweep.jobs = jobs;
        sweep.resume = resume;
        sweep.out = out;
        sweep.report = false;
        int status = 0;
        captured([&] { status = dtsim::cli::sweep_command(scenario_args(path, text, sets), sweep); });
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
  m.def("catalog", [] { return captured([] { dtsim::cli::catalog_command(Format::Json); }); });
}
