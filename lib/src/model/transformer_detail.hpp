// What the model's two files share (transformer.cpp: the maths of a shard;
// transformer_parallel.cpp: the machinery around it). Private to model/.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace attnlab::model_detail {

template <class T>
void zero(T* p, std::size_t n) {
    std::fill(p, p + n, T(0));
}

// Adds the time since the last lap to acc[kind] when on (thread 0, op timing
// enabled): the op timers of transformer::timings().
class lap_timer {
public:
    using clock = std::chrono::steady_clock;
    lap_timer(bool on, std::vector<double>& acc) : on_(on), acc_(acc), last_(on ? clock::now() : clock::time_point{}) {}
    void operator()(int kind) {
        if (!on_) return;
        const auto now = clock::now();
        acc_[kind] += std::chrono::duration<double>(now - last_).count();
        last_ = now;
    }

private:
    bool on_;
    std::vector<double>& acc_;
    clock::time_point last_;
};

}  // namespace attnlab::model_detail
