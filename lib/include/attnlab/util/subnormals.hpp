// Training in float with subnormals flushed to zero.
//
// Sharp attention rows (large learning rates, exact softmax) put many weights
// exp(s - max) below float's smallest normal number, 1.2e-38. x86 cores take
// a slow microcode path for every operation that reads or makes such a
// subnormal, which made such runs train about 12 times slower than the others.
// Flush-to-zero (results) and denormals-are-zero (inputs) treat them as 0
// instead: a change of at most 1.2e-38 in a value, far below float rounding
// of anything the model adds them to.
//
// The setting lives in each thread's MXCSR register, so the guard sets it in
// the calling thread and in every thread of its OpenMP team, and gives them
// all the caller's previous setting back when it ends (nested guards restore
// in turn). Double code (the gradient checks) outside a guard is unaffected.
#pragma once

#if defined(__SSE__) || defined(__x86_64__)
#define ATTNLAB_HAS_MXCSR 1
#endif

namespace attnlab {

class subnormals_flushed {
public:
    subnormals_flushed();
    ~subnormals_flushed();
    subnormals_flushed(const subnormals_flushed&) = delete;
    subnormals_flushed& operator=(const subnormals_flushed&) = delete;

private:
    unsigned before_ = 0;  // the caller's MXCSR when the guard began
};

// True when the calling thread flushes float subnormals to zero.
bool flushing_subnormals();

}  // namespace attnlab
