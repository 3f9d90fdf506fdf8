// The founding article's claims as data (scenarios/claims/claims.yaml): each claim's text, status, the scenarios it
// reads, and its figures with the article's value and tolerance. What dtsim computes for them is the drivers'
// (sim/drivers/claims.hpp); the structs are results/claims_report's.
#pragma once

#include <string>
#include <vector>

#include "results/claims_report.hpp"

namespace dtsim::scenario {

using results::Claim;
using results::ClaimFigure;
using results::ClaimValue;

// The claims of `file` (a claims.yaml), checked: unknown keys, missing fields, duplicate ids and bad values are
// one-line InputErrors naming the file, line and key.
std::vector<Claim> read_claims(const std::string& file);

}  // namespace dtsim::scenario
