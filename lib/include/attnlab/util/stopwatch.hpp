// Wall time on the steady clock (training, the runner and the bench time
// their work with it), in seconds.
#pragma once
#include <chrono>

namespace attnlab {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace attnlab
