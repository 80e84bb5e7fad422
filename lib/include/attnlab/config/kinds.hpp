// The kinds every layer names: the attention variants' and the tasks' enums,
// their counts, and the target of a position that is not an answer. The
// lowest layer (lib/README.md) holds them so that no layer includes a higher
// one for a name; the tables that give each kind its traits live with their
// owners (attention/variant_table.hpp, tasks/task_table.hpp). The variants'
// enums are their list's rows (variant_list.hpp); adding a task starts here.
#pragma once
#include <cstdint>

#include "attnlab/config/variant_list.hpp"

namespace attnlab {

#define ATTNLAB_ENUM_VALUE(name, ...) name,
#define ATTNLAB_COUNT_ROW(...) +1
enum class numerator_kind { ATTNLAB_NUMERATORS(ATTNLAB_ENUM_VALUE) };
enum class denominator_kind { ATTNLAB_DENOMINATORS(ATTNLAB_ENUM_VALUE) };
inline constexpr int numerator_count = 0 ATTNLAB_NUMERATORS(ATTNLAB_COUNT_ROW);
inline constexpr int denominator_count = 0 ATTNLAB_DENOMINATORS(ATTNLAB_COUNT_ROW);
#undef ATTNLAB_ENUM_VALUE
#undef ATTNLAB_COUNT_ROW

enum class task_kind { copy, lookup, selective_copy, induction, text };
inline constexpr int task_count = 5;

// The target of a position whose prediction is not scored: tasks write it,
// the model's loss skips it.
inline constexpr std::int32_t no_target = -1;

}  // namespace attnlab
