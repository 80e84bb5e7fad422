// The kinds every layer names: the attention variants' and the tasks' enums,
// their counts, and the target of a position that is not an answer. The
// lowest layer (lib/README.md) holds them so that no layer includes a higher
// one for a name; the tables that give each kind its traits live with their
// owners (attention/variant_table.hpp, tasks/task_table.hpp). Adding a
// variant or a task starts here (docs/attention.md, "Adding a variant").
#pragma once
#include <cstdint>

namespace attnlab {

enum class numerator_kind { exp, taylor, linear, elu1, relu, cosine, power };
enum class denominator_kind { softmax, norm, rmsnorm, layernorm, gate, length, none };
enum class task_kind { copy, lookup, selective_copy, induction, text };

inline constexpr int numerator_count = 7;
inline constexpr int denominator_count = 7;
inline constexpr int task_count = 5;

// The target of a position whose prediction is not scored: tasks write it,
// the model's loss skips it.
inline constexpr std::int32_t no_target = -1;

}  // namespace attnlab
