// The spec loader's spelling hint, for other readers of names (the command
// line's verbs and option values): ", did you mean 'X'?" for the name in
// `names` nearest to `word` when it is near enough to be a typo (case
// ignored; at most a third of the word's letters off, 1 to 3), else "".
#pragma once
#include <string>
#include <vector>

namespace attnlab {

std::string did_you_mean(const std::string& word, const std::vector<std::string>& names);

}  // namespace attnlab
