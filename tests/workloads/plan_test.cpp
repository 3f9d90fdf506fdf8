// Placeholder: filled in by the workloads issue.
#include <doctest/doctest.h>
