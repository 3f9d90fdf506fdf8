// Low-level process and descriptor helpers shared by the simulation child (simgrid/isolated.cpp), the sweep's
// workers and the checked file writer (cli/commands.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace dtsim::sim {

// Writes all of `data` to `fd`, retrying after signals; false (errno set, ENOSPC for a write of 0 bytes) when the
// system refuses a byte of it.
bool write_all(int fd, std::string_view data);

// fork(), the child tied to this process: it is killed (SIGKILL) when this process ends, however it ends
// (PR_SET_PDEATHSIG, which also holds across exec), and ends at once if this process has already gone. A simulation,
// a sweep's worker or gnuplot so never outlives the run that started it: its SIGKILL, a time limit's, Ctrl-C.
// Returns what fork() returns (-1 with errno when it failed).
int fork_tied();

// How far a simulation child has got, in memory it shares with its parent (run_isolated): the ops of the played
// ranks, all of them and those ended. The parent turns it into a progress line with an estimate.
struct Progress {
  std::atomic<std::uint64_t> total{0};
  std::atomic<std::uint64_t> done{0};
  std::atomic<bool> requests{false};   // what is counted: a served stream's requests, else a step's ops
};
// In a simulation child, its parent's Progress; elsewhere a counter nobody reads.
Progress& progress();
// Makes `p` what progress() returns (run_isolated, in the child).
void set_progress(Progress* p);

// True when this program was built with LeakSanitizer (the ASan build of CI).
bool leak_checked_build();

// Ends a forked child without running the parent's atexit handlers or destructors (`_exit`). In a LeakSanitizer
// build it first checks the child for leaks, which `_exit` would skip; a leak is reported on stderr and the child
// exits with kLeakStatus instead of `status`. `checked`: found_leaks() already ran (and found none), so the heap
// is not scanned twice.
[[noreturn]] void exit_child(int status, bool checked = false);

// What exit_child ends with when the child leaked (LeakSanitizer's own exit code).
inline constexpr int kLeakStatus = 23;

// In a LeakSanitizer build, checks now for leaks (reported on stderr); true when there were any. Always false
// in other builds. A child calls this before it reports its result, so that a leak cannot pass as success.
bool found_leaks();

}  // namespace dtsim::sim
