// The report of serving rows (`run` or `sweep` on an `inference:` scenario): a table of every row and, for served
// streams (`inference.requests`), the throughput-latency curves of a sweep over the arrival rate.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/report.hpp"

namespace dtsim::results {

// True for a serving result row (it has `ttft_s`).
bool is_serving_row(const nlohmann::json& row);

// Why a serving row cannot be drawn ("" when it can): a string `name`, numbers `gpus`, `ttft_s`, `tokens_per_s`,
// and for a stream (a `stream` object) the numbers `stream.arrival_rate_per_s`, `throughput_tokens_per_s` and the
// four percentiles (null where no request had them).
std::string serving_row_problem(const nlohmann::json& row);

// `rows`: serving result rows and sweep error rows, in order. Curves: one per setting of the sweep's other axes
// (the point's values but the arrival rate), each point a row, at its output throughput against its p50 and p99
// TTFT and TPOT. Throws std::invalid_argument when no row is a serving result, or a training row is among them.
Report build_serving_report(const std::vector<nlohmann::json>& rows, const std::string& title, const std::string& source);

}  // namespace dtsim::results
