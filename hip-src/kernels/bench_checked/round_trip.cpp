// xb's round-trip kernels (../bench/round_trip.hpp), built by bench/build.rs as checked
// device code in every build, so that `xbar bench` times checked code against the release
// code of the bench bundle in one run.
#include "../bench/round_trip.hpp"
