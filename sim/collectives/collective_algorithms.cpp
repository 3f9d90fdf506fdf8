// The collective algorithms as schedules over one step (`send`). Each builder states, for a request of S bytes
// over n ranks, who sends how much to whom in which step; lower() (collective.cpp) checks that the algorithm can
// run on the group before calling one, so the assertions here guard invariants, not input.
#include <algorithm>
#include <cstddef>
#include <map>
#include <utility>

#include "sim/collectives/collective_schedule.hpp"
#include "topology/error.hpp"

namespace dtsim::sim::detail {
namespace {

int at(const Ranks& ranks, int position) { return ranks[static_cast<std::size_t>(position)]; }

int chunks_of(const Request& r) {
  DTSIM_ASSERT(r.tuning->chunks >= 1, "pipelined collectives need at least one chunk");
  return r.tuning->chunks;
}

bool power_of_two(int n) { return n >= 1 && (n & (n - 1)) == 0; }

// Halving/doubling: in the step at `distance`, position p exchanges S·distance/n with position p xor distance.
void exchange_at(Schedule& s, int step, int distance, const Request& r) {
  const int n = r.size();
  const Bytes bytes = r.bytes * (static_cast<double>(distance) / n);
  for (int p = 0; p < n; ++p) send(s, step, at(r.ranks, p), at(r.ranks, p ^ distance), bytes);
}

// One rank's place in a binary tree: its parent (-1 at the root) and its depth (0 at the root).
struct TreeNode {
  int parent = -1;
  int depth = 0;
};
using Tree = std::vector<TreeNode>;   // per position

// NCCL's binary tree over roles 0..n-1 (src/graph/trees.cc, ncclGetBtree): role 0 is the root with one child; a
// role's parent clears its lowest set bit and sets the next one up, or only clears it when that is >= n. Odd
// roles are leaves.
int btree_parent(int role, int n) {
  if (role == 0) return -1;
  const int bit = role & -role;
  const int up = (role ^ bit) | (bit << 1);
  return up < n ? up : (role ^ bit);
}

// NCCL's double binary tree (ncclGetDtree): tree 0 gives position p role p; tree 1 mirrors it (n even: role
// n-1-p) or shifts it by one (n odd: role p-1), so the interior nodes of one tree are leaves of the other.
int role_of(int tree, int position, int n) {
  if (tree == 0) return position;
  return n % 2 == 0 ? n - 1 - position : (position - 1 + n) % n;
}
int position_of(int tree, int role, int n) {
  if (tree == 0) return role;
  return n % 2 == 0 ? n - 1 - role : (role + 1) % n;
}

Tree make_tree(int which, int n) {
  Tree tree(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) {
    const int up = btree_parent(role_of(which, p, n), n);
    tree[static_cast<std::size_t>(p)].parent = up < 0 ? -1 : position_of(which, up, n);
  }
  for (TreeNode& node : tree)
    for (int q = node.parent; q >= 0; q = tree[static_cast<std::size_t>(q)].parent) ++node.depth;
  return tree;
}

int height(const Tree& tree) {
  return std::ranges::max(tree, {}, &TreeNode::depth).depth;
}

// Runs `b` on every group of `groups` at once (each on `bytes`), on the same step numbers.
Schedule across(const std::vector<Ranks>& groups, Bytes bytes, Builder b, const Request& r) {
  Schedule s;
  for (const Ranks& g : groups) s = beside(std::move(s), b(r.with(g, bytes)));
  return s;
}

// The l-th rank of every machine, for each local index l.
std::vector<Ranks> columns(const std::vector<Ranks>& machines) {
  std::vector<Ranks> out(machines.front().size());
  for (const Ranks& m : machines) {
    DTSIM_ASSERT(m.size() == out.size(), "hierarchical collectives need equal ranks per machine");
    for (std::size_t l = 0; l < m.size(); ++l) out[l].push_back(m[l]);
  }
  return out;
}

int local_size(const std::vector<Ranks>& machines) { return static_cast<int>(machines.front().size()); }

}  // namespace

void send(Schedule& s, int step, Transfer t) {
  DTSIM_ASSERT(step >= 0, "steps count from 0");
  t.step = step;
  s.transfers.push_back(t);
  s.steps = std::max(s.steps, step + 1);
}

void send(Schedule& s, int step, int src, int dst, Bytes bytes) {
  Transfer t;
  t.src = src;
  t.dst = dst;
  t.bytes = bytes;
  send(s, step, t);
}

Schedule then(Schedule first, const Schedule& second) {
  const int offset = first.steps;
  for (const Transfer& t : second.transfers) send(first, offset + t.step, t);
  first.steps = offset + second.steps;
  return first;
}

Schedule beside(Schedule a, const Schedule& b) {
  for (const Transfer& t : b.transfers) send(a, t.step, t);
  a.steps = std::max(a.steps, b.steps);
  return a;
}

std::vector<Ranks> ranks_by_machine(const Request& r) {
  std::map<int, Ranks> by_machine;
  for (int rank : r.ranks) by_machine[r.layout->machine[static_cast<std::size_t>(rank)]].push_back(rank);
  std::vector<Ranks> out;
  for (auto& [machine, ranks] : by_machine) out.push_back(std::move(ranks));
  return out;
}

namespace {

// NCCL's channels across machines. A single ring leaves each machine once, through one NIC, so it would cap a
// multi-machine collective at one NIC's bandwidth. NCCL instead runs one ring per channel, each entering and
// leaving a machine through other GPUs and NICs (its topology search assigns every NIC to channels), and splits
// the buffer across them; on a DGX A100 pair that reaches about 8 x nccl.md's 24 GB/s per HDR NIC. dtsim's
// channels: with k ranks on every machine (k > 1) and more than one machine, k rings, ring c walking each
// machine's ranks rotated by c (it enters at local position c and leaves from c-1), each carrying S/k. Every
// local position leaves its machine in exactly one ring, so each GPU's NIC carries one ring's traffic out and
// one in; inside a machine the rings share the edges, merged per step below. The ring's step count
// (n-1) and so its latency are unchanged. Groups of one machine, or of one rank per machine, keep one ring.
// tuning.max_channels > 0 caps the rings (NCCL_MAX_NCHANNELS): C < k rings start at local positions c·k/C, so
// they still leave through distinct NICs; C = 1 is the group's single ring in its own order.
std::vector<Ranks> channel_rings(const Request& r) {
  const std::vector<Ranks> machines = ranks_by_machine(r);
  const std::size_t k = machines.front().size();
  const bool balanced = std::ranges::all_of(machines, [&](const Ranks& m) { return m.size() == k; });
  const int cap = r.tuning->max_channels;
  DTSIM_ASSERT(cap >= 0, "max_channels counts rings; 0 means one per rank of a machine");
  if (machines.size() < 2 || k < 2 || !balanced || cap == 1) return {r.ranks};
  const std::size_t count = cap == 0 ? k : std::min(k, static_cast<std::size_t>(cap));
  std::vector<Ranks> rings(count);
  for (std::size_t c = 0; c < count; ++c)
    for (const Ranks& m : machines)
      for (std::size_t l = 0; l < k; ++l) rings[c].push_back(m[(c * k / count + l) % k]);
  return rings;
}

}  // namespace

// Ring: n-1 steps; in each, every rank sends one shard (S/n) to the next rank of each channel's ring (S/n split
// over the channels). Reduce-scatter and all-gather move the same bytes; the receiver reduces the shard
// (reduce-scatter) or keeps it (all-gather). Every step moves the same sends: one step is built, the rings'
// shared edges merged, and repeated (k rings expanded step by step would cost k x n x (n-1) transfers before the
// lowering's merge).
Schedule ring_step(const Request& r) {
  const std::vector<Ranks> rings = channel_rings(r);
  const int n = r.size();
  const Bytes share = r.bytes / static_cast<double>(rings.size()) / n;
  std::map<std::pair<int, int>, Bytes> step;
  for (const Ranks& ring : rings)
    for (int i = 0; i < n; ++i) step[{at(ring, i), at(ring, (i + 1) % n)}] += share;
  Schedule s;
  for (const auto& [ends, bytes] : step) send(s, 0, ends.first, ends.second, bytes);
  return s;
}

Schedule ring_reduce_scatter(const Request& r) {
  const Schedule step = ring_step(r);
  Schedule s;
  for (int k = 0; k + 1 < r.size(); ++k) s = then(std::move(s), step);
  return s;
}

Schedule ring_all_gather(const Request& r) { return ring_reduce_scatter(r); }

// Pipelined chain from position 0: chunk c crosses hop h (position h to h+1) in step c+h.
Schedule chain_broadcast(const Request& r) {
  Schedule s;
  const int k = chunks_of(r);
  for (int c = 0; c < k; ++c)
    for (int h = 0; h + 1 < r.size(); ++h) send(s, c + h, at(r.ranks, h), at(r.ranks, h + 1), r.bytes / k);
  return s;
}

// One step: every rank sends S/n to every other (its shards of a reduce-scatter, its own shard of an
// all-gather, the peer's block of an all-to-all).
Schedule direct_exchange(const Request& r) {
  Schedule s;
  const int n = r.size();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j) send(s, 0, at(r.ranks, i), at(r.ranks, j), r.bytes / n);
  return s;
}

// One step: position 0 sends the whole buffer to every other rank.
Schedule direct_broadcast(const Request& r) {
  Schedule s;
  for (int j = 1; j < r.size(); ++j) send(s, 0, at(r.ranks, 0), at(r.ranks, j), r.bytes);
  return s;
}

// Rabenseifner's recursive halving: step j exchanges S/2^(j+1) with the partner at distance n/2^(j+1).
Schedule halving_reduce_scatter(const Request& r) {
  DTSIM_ASSERT(power_of_two(r.size()), "halving-doubling needs a power-of-two group");
  Schedule s;
  for (int step = 0, d = r.size() / 2; d >= 1; ++step, d /= 2) exchange_at(s, step, d, r);
  return s;
}

// Recursive doubling: step j exchanges S·2^j/n with the partner at distance 2^j.
Schedule doubling_all_gather(const Request& r) {
  DTSIM_ASSERT(power_of_two(r.size()), "halving-doubling needs a power-of-two group");
  Schedule s;
  for (int step = 0, d = 1; d < r.size(); ++step, d *= 2) exchange_at(s, step, d, r);
  return s;
}

// NCCL's double binary tree: each tree carries half the buffer in `chunks` chunks, reduced up then broadcast
// down. Steps are aligned on depth so the pipeline forms: with D the trees' height, a rank at depth d sends chunk
// c up in step c+D-d (its children's chunk c arrived in step c+D-d-1) and down in step c+D+d (its parent's
// chunk c arrived in step c+D+d-1); the root turns chunk c around in step c+D. Steps: chunks + 2D - 1.
Schedule tree_all_reduce(const Request& r) {
  Schedule s;
  const int n = r.size();
  const int k = chunks_of(r);
  const Bytes chunk = r.bytes / (2.0 * k);
  for (int which = 0; which < 2; ++which) {
    const Tree tree = make_tree(which, n);
    const int top = height(tree);
    for (int c = 0; c < k; ++c)
      for (int p = 0; p < n; ++p) {
        const TreeNode& node = tree[static_cast<std::size_t>(p)];
        if (node.parent < 0) continue;
        const int parent_depth = node.depth - 1;
        send(s, c + top - node.depth, at(r.ranks, p), at(r.ranks, node.parent), chunk);
        send(s, c + top + parent_depth, at(r.ranks, node.parent), at(r.ranks, p), chunk);
      }
  }
  return s;
}

// Down tree 0 (rooted at position 0) only, the whole buffer in `chunks` chunks: a rank at depth d forwards chunk
// c in step c+d. NCCL itself broadcasts on rings; this is the tree counterpart for comparison.
Schedule tree_broadcast(const Request& r) {
  Schedule s;
  const int k = chunks_of(r);
  const Tree tree = make_tree(0, r.size());
  for (int c = 0; c < k; ++c)
    for (int p = 0; p < r.size(); ++p) {
      const TreeNode& node = tree[static_cast<std::size_t>(p)];
      if (node.parent >= 0) send(s, c + node.depth - 1, at(r.ranks, node.parent), at(r.ranks, p), r.bytes / k);
    }
  return s;
}

// NVLink SHARP inside one machine: every rank sends its buffer up to the NVSwitch, which reduces it, and
// receives the reduced buffer back, both at most at the switch's reduction rate per port. Pipelined in
// `chunks` chunks: chunk c goes up in step c and comes down in step c+1, so the two directions of each
// full-duplex port work at once (two unpipelined steps would halve the bandwidth). Steps: chunks + 1.
Schedule nvls_all_reduce(const Request& r) {
  Schedule s;
  const int k = chunks_of(r);
  for (int c = 0; c < k; ++c)
    for (int rank : r.ranks) {
      Transfer up;
      up.src = rank;
      up.dst = kSwitch;
      up.bytes = r.bytes / k;
      up.machine = r.layout->machine[static_cast<std::size_t>(rank)];
      up.rate = r.layout->nvls_rate.value() > 0 ? r.layout->nvls_rate : r.tuning->nvls_port_rate;
      Transfer down = up;
      std::swap(down.src, down.dst);
      send(s, c, up);
      send(s, c + 1, down);
    }
  return s;
}

// Reduce-scatter inside each machine (ring over its ranks, S), then across machines among the ranks with the
// same local index (ring, S/local_n): each rank ends with S/n, having sent the optimum (n-1)/n·S.
Schedule hierarchical_reduce_scatter(const Request& r) {
  const std::vector<Ranks> machines = ranks_by_machine(r);
  const Schedule intra = across(machines, r.bytes, ring_reduce_scatter, r);
  return then(intra, across(columns(machines), r.bytes / local_size(machines), ring_reduce_scatter, r));
}

// The mirror image: all-gather across machines (S/local_n), then inside each machine (S). Composed after the
// reduce-scatter, the two middle phases form the inter-machine all-reduce on S/local_n.
Schedule hierarchical_all_gather(const Request& r) {
  const std::vector<Ranks> machines = ranks_by_machine(r);
  const Schedule inter = across(columns(machines), r.bytes / local_size(machines), ring_all_gather, r);
  return then(inter, across(machines, r.bytes, ring_all_gather, r));
}

}  // namespace dtsim::sim::detail
