// Placeholder: filled in by the workloads issue.
namespace dtsim::workloads {}
