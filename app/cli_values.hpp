// Checks of option values, with messages in attnlab's words: CLI11 reports a
// failed check as "<option>: <message>", and main() adds "attnlab: error: ".
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace attnlab::cli {

// A whole number from lo to hi: "expected an integer from 0 to 1024, got 'two'".
CLI::Validator integer_in(long lo, long hi);
// A finite number from lo to hi (nan and inf are refused): "expected a number of
// seconds from 0 to 1e9, got 'nan'"; `what` names the quantity ("a number of seconds").
CLI::Validator number_in(double lo, double hi, const std::string& what = "a number");
// One of `names`: "expected parallel or recurrent, got 'recurent', did you mean 'recurrent'?".
CLI::Validator one_of(const std::vector<std::string>& names);

// "a", "a or b", "a, b or c".
std::string either_of(const std::vector<std::string>& names);

}  // namespace attnlab::cli
