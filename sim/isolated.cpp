// Placeholder: filled in by the engine issue.
namespace dtsim::sim {}
