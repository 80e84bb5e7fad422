// Checks of option values, with messages in attnlab's words: CLI11 reports a
// failed check as "<option>: <message>", and main() adds "attnlab: error: ".
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace attnlab::cli {

// A whole number from lo to hi: "expected an integer from 0 to 1024, got 'two'".
CLI::Validator integer_in(long lo, long hi);
// A whole number from 0 to 2^64 - 1 in decimal digits (a seed): no sign, no
// wrap-around ("-1" and "18446744073709551616" are refused, not taken modulo 2^64).
CLI::Validator unsigned_64();
// A value that is not empty: `--out ''` is refused ("expected a file name,
// got ''"), never taken for the option's absence. `what` names the value.
CLI::Validator not_empty(const std::string& what);
// A finite number from lo to hi (nan and inf are refused): "expected a number of
// seconds from 0 to 1e9, got 'nan'"; `what` names the quantity ("a number of seconds").
CLI::Validator number_in(double lo, double hi, const std::string& what = "a number");
// One of `names`: "expected parallel or recurrent, got 'recurent', did you mean 'recurrent'?".
CLI::Validator one_of(const std::vector<std::string>& names);

// "a", "a or b", "a, b or c".
std::string either_of(const std::vector<std::string>& names);

}  // namespace attnlab::cli
