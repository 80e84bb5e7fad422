// How soon a run solves its task (results/steps_to_solve.hpp).
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "attnlab/results/steps_to_solve.hpp"

using namespace attnlab;

namespace {
const std::string steps_header = "step,split,loss,token_acc,seq_acc,lr,grad_norm,tokens_per_s,elapsed_s\n";
}  // namespace

TEST_CASE("steps to solve: the first validation row at the task's threshold", "[steps_to_solve]") {
    const std::string rows =
        steps_header +
        "0,val,2.0,0.1,0.0,,,,0.1\n0,test,2.0,0.1,0.0,,,,0.2\n"
        "100,train,1.0,0.5,,0.001,1.0,100,1\n100,val,1.0,0.995,0.5,,,,1\n100,test,1.0,0.999,0.5,,,,1\n"
        "200,train,0.5,0.9,,0.001,1.0,100,2\n200,val,0.5,0.999,0.95,,,,2\n";
    // lookup: token accuracy >= 0.99 on validation (test rows never count): step 100.
    CHECK(steps_to_solve_in(rows, task_kind::lookup) == std::optional<long>(100));
    // copy: sequence accuracy >= 0.9: step 200.
    CHECK(steps_to_solve_in(rows, task_kind::copy) == std::optional<long>(200));
    // text never solves; a run that never reaches the threshold; a test row at the threshold is not enough.
    CHECK_FALSE(steps_to_solve_in(rows, task_kind::text));
    CHECK_FALSE(
        steps_to_solve_in(steps_header + "0,val,2.0,0.98,0.0,,,,0.1\n0,test,2.0,1.0,1.0,,,,0.2\n", task_kind::lookup));
    CHECK_FALSE(steps_to_solve_in("", task_kind::lookup));
    CHECK_FALSE(steps_to_solve_in(steps_header + "100,val", task_kind::lookup));  // a row cut short
    CHECK_FALSE(steps_to_solve("/nonexistent/metrics.csv", task_kind::lookup));
}

TEST_CASE("steps to solve: the median counts runs that never solve as the latest", "[steps_to_solve]") {
    using steps = std::vector<std::optional<long>>;
    CHECK(median_steps_to_solve(steps{300, 100, 200}) == std::optional<double>(200));
    CHECK(median_steps_to_solve(steps{300, 100, std::nullopt}) == std::optional<double>(300));
    CHECK_FALSE(median_steps_to_solve(steps{300, std::nullopt, std::nullopt}));
    CHECK(median_steps_to_solve(steps{400, 100, 200, std::nullopt}) == std::optional<double>(300));
    CHECK_FALSE(median_steps_to_solve(steps{100, 200, std::nullopt, std::nullopt}));
    CHECK_FALSE(median_steps_to_solve(steps{}));
}
