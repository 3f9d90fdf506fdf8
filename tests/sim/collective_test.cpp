// Placeholder: filled in by the engine issue.
#include <doctest/doctest.h>
