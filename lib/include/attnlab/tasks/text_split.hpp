// The split of a text task's file (docs/tasks.md "text"): n bytes in three
// contiguous parts, e = floor(f n) with f = task.holdout; the test part is
// the last e bytes, the validation part the e bytes before them, the train
// part the rest. Evaluation window k of the validation or test part starts
// at byte k T of it and holds T + 1 bytes (T inputs, the T next bytes as
// targets), so consecutive windows share one byte and every byte after the
// first is predicted once. A leaf header: the loader, the memory estimate
// and the task read the same arithmetic.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>

namespace attnlab {

struct text_split {
    std::size_t n = 0;  // bytes of the file
    std::size_t e = 0;  // bytes of the validation part and of the test part

    std::size_t train_bytes() const { return n - 2 * e; }  // [0, n - 2e)
    std::size_t val_begin() const { return n - 2 * e; }    // [n - 2e, n - e)
    std::size_t test_begin() const { return n - e; }       // [n - e, n)
};

// holdout in (0, 0.5) (a rule of the task table).
inline text_split split_text(std::size_t n, double holdout) {
    return {n, static_cast<std::size_t>(std::floor(holdout * static_cast<double>(n)))};
}

// Windows of T + 1 bytes starting at 0, T, 2T, ... that fit in `bytes`.
inline std::size_t eval_windows_that_fit(std::size_t bytes, int T) {
    return bytes == 0 ? 0 : (bytes - 1) / static_cast<std::size_t>(T);
}

// The windows an evaluation set of `wanted` examples holds: all that fit if fewer.
inline std::size_t eval_windows(std::size_t bytes, int T, int wanted) {
    return std::min(eval_windows_that_fit(bytes, T), static_cast<std::size_t>(std::max(wanted, 0)));
}

// Start offsets of training windows: T + 1 bytes inside the train part,
// 0 .. train_bytes - T - 1 (0 when no window fits).
inline std::size_t train_window_starts(const text_split& s, int T) {
    const std::size_t need = static_cast<std::size_t>(T) + 1;
    return s.train_bytes() >= need ? s.train_bytes() - need + 1 : 0;
}

}  // namespace attnlab
