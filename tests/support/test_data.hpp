// Files under tests/data that several test files read.
#pragma once
#include <string>

namespace attnlab::test {

// A small English text, the corpus of the text task's tests.
inline const std::string text_fixture = std::string(ATTNLAB_TEST_DATA) + "/text_fixture.txt";

}  // namespace attnlab::test
