// `dtsim catalog`: the GPUs, links and model presets dtsim knows, as a table or JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace dtsim::results {

std::string catalog_table();
nlohmann::json catalog_json();

}  // namespace dtsim::results
