#include "attnlab/util/subnormals.hpp"

#ifdef ATTNLAB_HAS_MXCSR
#include <xmmintrin.h>
#endif

namespace attnlab {

#ifdef ATTNLAB_HAS_MXCSR
namespace {
constexpr unsigned flush_bits = 0x8040;  // FTZ (bit 15) | DAZ (bit 6)

// Sets MXCSR to `value` in the calling thread and every thread of its
// OpenMP team. The same value for all: a pool thread started inside a guard
// inherits the flushed register, so its "own" earlier value would be wrong.
void set_in_team(unsigned value) {
#pragma omp parallel
    _mm_setcsr(value);
    _mm_setcsr(value);
}
}  // namespace

subnormals_flushed::subnormals_flushed() : before_(_mm_getcsr()) { set_in_team(before_ | flush_bits); }

subnormals_flushed::~subnormals_flushed() { set_in_team(before_); }

bool flushing_subnormals() { return (_mm_getcsr() & flush_bits) == flush_bits; }
#else
subnormals_flushed::subnormals_flushed() = default;
subnormals_flushed::~subnormals_flushed() = default;
bool flushing_subnormals() { return false; }
#endif

}  // namespace attnlab
