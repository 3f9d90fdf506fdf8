// Collective algorithms as data: a collective over a group of ranks is lowered into transfers, each in a step.
// Plain code, no SimGrid: the analytic engine and the SimGrid engine play the same lowering.
//
//   ring all-reduce, n = 4:  step 0..n-2 reduce-scatter (rank i sends S/n to i+1), step n-1..2n-3 all-gather
//   all-reduce = reduce-scatter + all-gather, composed (one place for each); variants are rows, not copies.
//
// Step rule (both engines): a transfer of step k from endpoint e starts once every transfer of step k-1 into or
// out of e has ended, plus `step_latency`; the collective starts `latency` after all its members reached it and
// ends when its last transfer ends.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/units.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::sim {

enum class Algorithm { Auto, Ring, Tree, Direct, HalvingDoubling, Nvls, Hierarchical };
std::string_view to_string(Algorithm a);
std::optional<Algorithm> parse_algorithm(std::string_view name);
inline constexpr std::string_view kAlgorithmNames = "auto, ring, tree, direct, halving-doubling, nvls, hierarchical";

// NCCL's protocols: LL (8-byte stores of 4 data bytes + 4 flag bytes: lowest latency, half the payload), LL128
// (128-byte lines carrying 120 data bytes), Simple (full payload, highest latency). Auto picks one per call.
enum class Protocol { Auto, LL, LL128, Simple };
std::string_view to_string(Protocol p);
std::optional<Protocol> parse_protocol(std::string_view name);
inline constexpr std::string_view kProtocolNames = "auto, ll, ll128, simple";

// What the algorithms need to know of where the group's ranks sit.
struct GroupLayout {
  std::vector<int> machine;   // per group rank, the machine (server) it is on; ranks of a machine share its fabric
  bool nvls = false;          // every machine of the group has an NVSwitch that reduces in the switch (NVLink SHARP)
  bool direct_links = false;  // every pair of ranks has a link of its own (a full mesh): a ring would use 2 of
                              // each GPU's n-1 links, so auto sends to every peer at once (direct), as NCCL's
                              // multiple rings over a mesh do
  std::vector<int> order{};   // the group ranks in the order rings, chains and trees walk them: each machine's
                              // GPUs as NCCL's ring search orders them (topology/ring_order.hpp), in the places
                              // the machine's ranks hold; empty: group-rank order
  BytesPerSecond nvls_rate{}; // with nvls, the switch's reduction rate per GPU port (its link class's; 0: the tuning's)
  // With nvls, what one rank's links to its machine's switch give a transfer to another rank of the machine: their
  // rate (line rate x efficiency, all of them) and the latency of the two hops through the switch. Auto weighs
  // NVLS against a ring with them (0: unknown, auto keeps NVLS).
  BytesPerSecond switch_path_rate{};
  Seconds switch_path_latency{};
};

// An endpoint that is not a group rank: the NVSwitch of machine `Transfer::machine` (NVLS only).
inline constexpr int kSwitch = -1;

struct Transfer {
  int src = 0;                // group rank, or kSwitch
  int dst = 0;                // group rank, or kSwitch
  Bytes bytes;
  int step = 0;
  int machine = -1;           // the machine whose switch a kSwitch endpoint is
  std::optional<BytesPerSecond> rate;   // a cap on this transfer's rate (NVLS: the switch's reduction rate per port)
};

struct Lowered {
  Algorithm algorithm = Algorithm::Ring;   // the one used (`auto` resolved)
  Protocol protocol = Protocol::Simple;    // the one used (`auto` resolved)
  std::vector<Transfer> transfers;         // ordered by step; bytes on the wire (payload / the protocol's efficiency)
  int steps = 0;
  bool periodic = false;                   // `transfers` are step 0's, and each of the `steps` steps moves them
  Seconds latency;                         // protocol latency of the collective, once
  Seconds step_latency;                    // protocol latency per step
};

// One protocol's costs. Ring-like algorithms (ring, direct, halving-doubling, hierarchical) pay `ring_latency`
// once, the tree `tree_latency`; every step adds `step_latency` on top of the links' own hop latency.
struct ProtocolCosts {
  Seconds ring_latency;
  Seconds tree_latency;
  Seconds step_latency;
  double efficiency = 1.0;   // payload bytes per byte on the wire, in (0, 1]
};

// Protocol constants (data in the catalog, each with its source): NCCL's latencies per protocol, the chunk
// count of pipelined algorithms, the NVSwitch's in-switch reduction rate per GPU port.
struct CollectiveTuning {
  ProtocolCosts ll;
  ProtocolCosts ll128;
  ProtocolCosts simple;
  Seconds nvls_latency;                    // NVLS runs Simple only; no per-step latency (NCCL's model has none)
  BytesPerSecond choice_bandwidth;         // auto protocol: the nominal per-rank bandwidth of its time estimate
  int chunks = 8;                          // pipelined algorithms (tree, chain broadcast, NVLS) split the buffer
                                           // into this many chunks
  BytesPerSecond nvls_port_rate;
  Bytes tree_below;                        // auto: tree instead of ring across 1,024 machines below this size;
                                           // the threshold scales with (machines - 1)
  int max_channels = 0;                    // rings of a ring collective across machines (NCCL_MAX_NCHANNELS):
                                           // 0 = one per rank of a machine, each leaving through its own GPU's
                                           // NIC (NCCL's default where every GPU has a NIC); a scenario setting
                                           // (simulation.max_channels), not a catalog constant
  std::string source;

  [[nodiscard]] const ProtocolCosts& of(Protocol p) const;   // LL, LL128 or Simple
};
const CollectiveTuning& collective_tuning();
// The most rings simulation.max_channels (and collective --max-channels) may ask for.
inline constexpr int kMaxChannels = 64;
// The catalog's tuning with a scenario's simulation.max_channels (0 to kMaxChannels).
CollectiveTuning collective_tuning(int max_channels);

// Lowers one collective of `bytes` (the buffer as nccl-tests counts it) over `layout`. Throws InputError
// (key "simulation.collective_algo") when the algorithm cannot run on this group (NVLS without an NVSwitch,
// halving-doubling on a group size that is not a power of two, ...), and (key "protocol") when the algorithm
// cannot run the protocol (NVLS with LL or LL128).
//
// Protocol::Auto picks, among the protocols the algorithm runs, the least estimated time
//   T_p = base latency_p + steps x step_latency_p + W / (efficiency_p x tuning.choice_bandwidth),
// W the most payload bytes any rank sends or receives; ties go to the lower-latency protocol (LL, LL128, Simple).
// Algorithm::Auto on an all-reduce inside one NVLS machine weighs NVLS against a ring under each protocol (the
// one asked, or all three under Protocol::Auto) as NCCL's tuner does (least predicted time over algorithms and
// protocols, src/graph/tuning.cc): each lowering timed contention-free over the layout's switch path
// (switch_path_rate, switch_path_latency); ties go to NVLS. So small all-reduces run ring LL (NCCL's 15 us on 8
// ranks against NVLS's 25 us floor; up to 1 MB on 8 H100), large ones NVLS.
Lowered lower(workloads::CollectiveKind kind, Bytes bytes, const GroupLayout& layout, Algorithm algorithm,
              const CollectiveTuning& tuning = collective_tuning());
Lowered lower(workloads::CollectiveKind kind, Bytes bytes, const GroupLayout& layout, Algorithm algorithm,
              Protocol protocol, const CollectiveTuning& tuning = collective_tuning());

// lower(), but a lowering whose steps are all alike (a ring's reduce-scatter, all-gather and all-reduce) comes as
// its first step, `periodic`, built without the others: a ring over n ranks costs one step's transfers, not
// 2(n-1) of them. Everything else comes as lower() gives it.
Lowered lower_periodic(workloads::CollectiveKind kind, Bytes bytes, const GroupLayout& layout, Algorithm algorithm,
                       Protocol protocol, const CollectiveTuning& tuning = collective_tuning());
// A periodic lowering with every step written out (anything else unchanged).
Lowered expand(Lowered lowered);

// Aggregated flows (DESIGN.md "Scale"): a lowering whose steps all move the same transfers (same ends, bytes
// and rate cap, in the same order: a ring's 2(n-1) steps) as one step whose transfers each carry the bytes of
// all of them; `steps` keeps the count it stands for. nullopt when the steps differ (tree, halving-doubling,
// NVLS, hierarchical) or there is one step: nothing to aggregate. The aggregate's latencies are the original's;
// whoever plays it adds the difference between the two played contention-free (lowered_time).
std::optional<Lowered> aggregate_steps(const Lowered& lowered);
// The same test, keeping one period instead: the first step's transfers, `steps` unchanged, `periodic` (nullopt as
// above; a periodic lowering is its own first step).
std::optional<Lowered> first_step(const Lowered& lowered);
// A first_step as its aggregate: each transfer carries `steps` times its bytes, in one step.
Lowered aggregate_first_step(Lowered step);

// nccl-tests' bus bandwidth factor: all-reduce 2(n-1)/n, reduce-scatter / all-gather / all-to-all (n-1)/n,
// broadcast 1; whatever the algorithm.
double bus_factor(workloads::CollectiveKind kind, int n);

}  // namespace dtsim::sim

// fmt prints algorithms by name ("halving-doubling"); fmt 9.1 takes format_as only when it returns an integer.
template <>
struct fmt::formatter<dtsim::sim::Algorithm> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(dtsim::sim::Algorithm a, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::string_view>::format(dtsim::sim::to_string(a), ctx);
  }
};
template <>
struct fmt::formatter<dtsim::sim::Protocol> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(dtsim::sim::Protocol p, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::string_view>::format(dtsim::sim::to_string(p), ctx);
  }
};
