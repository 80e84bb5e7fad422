// The text task (docs/tasks.md "text"): the split of a file into contiguous
// train, validation and test parts, the fixed evaluation windows, training
// windows that stay in the train part, the unigram and bigram baselines
// against independent computations, SHA-256 against published vectors, the
// spec loader's checks of the file (through `attnlab validate` and `attnlab
// run`, which must write nothing), a relative path from the spec's folder, the
// same bytes at another path as the same run, the outputs of a text run
// (empty seq_acc cells, bits per byte, baselines) and a tiny model that learns
// more than the unigram statistics of tests/data/text_fixture.txt.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attnlab/io/sha256.hpp"
#include "attnlab/run/run_check.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/tasks/text.hpp"
#include "attnlab/train/memory_estimate.hpp"
#include "attnlab/train/trainer.hpp"
#include "attnlab/util/error.hpp"
#include "support/process_support.hpp"
#include "support/test_data.hpp"
#include "support/tiny_config.hpp"

using namespace attnlab;
using namespace attnlab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// A file whose every byte tells where it is: the train part holds the bytes
// 0..199 in order, the validation part 200..224 and the test part 225..249
// (n = 250, holdout 0.1: e = 25). A window's first byte is its start.
std::string positional_bytes() {
    std::string s;
    for (int i = 0; i < 250; ++i) s += static_cast<char>(i);
    return s;
}

task_config text_config(const std::string& path, int T, double holdout, int test_examples) {
    task_config c;
    c.kind = task_kind::text;
    c.path = path;
    c.seq_len = T;
    c.holdout = holdout;
    c.test_examples = test_examples;
    c.val_examples = 0;  // = test_examples
    c.train_examples = 0;
    return c;
}

int byte_at(const batch& b, int row, int t, bool target) {
    const std::size_t i = static_cast<std::size_t>(row) * static_cast<std::size_t>(b.T) + static_cast<std::size_t>(t);
    return target ? b.targets[i] : b.tokens[i];
}

// The spec of a tiny text run on `path` (written as is).
std::string tiny_text_spec(const std::string& name, const std::string& path, const std::string& task_extra = "",
                           int steps = 4) {
    return "name: " + name +
           "\n"
           "base:\n"
           "  seed: 0\n"
           "  task:\n"
           "    kind: text\n"
           "    path: " +
           path +
           "\n"
           "    seq_len: 16\n"
           "    test_examples: 8\n" +
           task_extra +
           "  model: {layers: 1, d_model: 16, heads: 2}\n"
           "  attention: {numerator: exp, denominator: softmax}\n"
           "  train: {steps: " +
           std::to_string(steps) + ", batch: 4, lr: 1.0e-3, warmup: 1, eval_every: 2}\n";
}

// The one line of stderr of a refused command.
std::string single_line_of(const cli_result& r) {
    const auto lines = lines_of(r.err);
    REQUIRE(lines.size() == 1);
    return lines[0];
}

}  // namespace

TEST_CASE("text: sha256 matches the published test vectors and sha256sum", "[text]") {
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // 56 bytes: the padding spills into a second block.
    CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    // `sha256sum tests/data/text_fixture.txt`
    CHECK(sha256_hex(read_text(text_fixture)) == "9d36be788cb464965a45e504ea077d612feaacc52f7c84a218d4a47a4072c7a8");
}

TEST_CASE("text: the split is three contiguous parts that cover the file", "[text]") {
    // e = floor(f n), worked by hand.
    CHECK(split_text(32615, 0.05).e == 1630);  // 1630.75
    CHECK(split_text(250, 0.1).e == 25);
    CHECK(split_text(100, 0.49).e == 49);
    CHECK(split_text(7, 0.1).e == 0);
    for (const std::size_t n : {1, 10, 999, 32615, 4137850})
        for (const double f : {0.01, 0.05, 0.25, 0.4999}) {
            const text_split s = split_text(n, f);
            INFO("n " << n << ", f " << f);
            CHECK(s.e <= n * f);
            CHECK(s.e + 1 > n * f);
            CHECK(s.train_bytes() + s.e + s.e == n);  // train, validation, test: disjoint, in order, all of it
            CHECK(s.val_begin() == s.train_bytes());
            CHECK(s.test_begin() == s.val_begin() + s.e);
        }
    // Windows of T + 1 bytes at 0, T, 2T, ...: the last one ends at k T + T <= bytes - 1.
    CHECK(eval_windows_that_fit(25, 8) == 3);  // 0..8, 8..16, 16..24
    CHECK(eval_windows_that_fit(24, 8) == 2);
    CHECK(eval_windows_that_fit(9, 8) == 1);
    CHECK(eval_windows_that_fit(8, 8) == 0);
    CHECK(eval_windows(25, 8, 2) == 2);
}

TEST_CASE("text: evaluation windows start at k T of their part, hold T + 1 bytes and do not depend on the seed",
          "[text]") {
    temp_dir dir;
    write_text(dir / "pos.bin", positional_bytes());
    const task_config c = text_config((dir / "pos.bin").string(), 8, 0.1, 100);  // all that fit: 3
    for (const std::uint64_t seed : {0, 1, 17}) {
        auto tk = make_task(c, seed);
        CHECK(tk->vocab_size() == 256);
        for (const auto& [name, set, begin] :
             {std::make_tuple("val", &tk->val_set(), 200), std::make_tuple("test", &tk->test_set(), 225)}) {
            INFO(name << " set, seed " << seed);
            REQUIRE(set->B == 3);
            REQUIRE(set->T == 8);
            std::multiset<int> predicted;
            for (int k = 0; k < 3; ++k)
                for (int t = 0; t < 8; ++t) {
                    CHECK(byte_at(*set, k, t, false) == begin + 8 * k + t);
                    CHECK(byte_at(*set, k, t, true) == begin + 8 * k + t + 1);  // the next byte
                    predicted.insert(byte_at(*set, k, t, true));
                }
            // Every byte after the first of the part's 25 is predicted once.
            std::multiset<int> want;
            for (int i = 1; i <= 24; ++i) want.insert(begin + i);
            CHECK(predicted == want);
        }
    }
    // Fewer than fit: the first windows.
    task_config two = c;
    two.test_examples = 2;
    two.val_examples = 1;
    auto tk = make_task(two, 0);
    CHECK(tk->test_set().B == 2);
    CHECK(tk->val_set().B == 1);
    CHECK(byte_at(tk->test_set(), 1, 0, false) == 233);
}

TEST_CASE("text: training windows lie inside the train part and reach all of it", "[text]") {
    temp_dir dir;
    write_text(dir / "pos.bin", positional_bytes());
    for (const int pool : {0, 10}) {
        task_config c = text_config((dir / "pos.bin").string(), 8, 0.1, 3);
        c.train_examples = pool;
        INFO("train_examples " << pool);
        auto tk = make_task(c, 5);
        std::map<int, int> starts;  // start -> windows drawn there
        batch b;
        for (int step = 0; step < 200; ++step) {
            tk->next_train_batch(b, 32);
            REQUIRE(b.T == 8);
            for (int i = 0; i < b.B; ++i) {
                const int start = byte_at(b, i, 0, false);
                ++starts[start];
                for (int t = 0; t < 8; ++t) {
                    CHECK(byte_at(b, i, t, false) == start + t);
                    CHECK(byte_at(b, i, t, true) == start + t + 1);
                }
                CHECK(start + 8 < 200);  // the window's last byte is in the train part, never a validation byte
            }
        }
        if (pool == 0) {
            // 6400 uniform draws over the 192 starts 0..191: each about 33 times.
            CHECK(starts.size() == 192);
            CHECK(starts.begin()->first == 0);
            CHECK(starts.rbegin()->first == 191);
            for (const auto& [start, n] : starts) CHECK(n > 10);
        } else {
            CHECK(starts.size() <= 10);
        }
    }
}

TEST_CASE("text: a file too short, a holdout out of range or no path is a logic error of the task", "[text]") {
    temp_dir dir;
    write_text(dir / "pos.bin", positional_bytes());
    const std::string path = (dir / "pos.bin").string();
    CHECK_THROWS_AS(make_task(text_config(path, 25, 0.1, 3), 0), std::logic_error);  // no evaluation window fits
    CHECK_NOTHROW(make_task(text_config(path, 24, 0.1, 3), 0));
    CHECK_THROWS_AS(make_task(text_config(path, 8, 0.5, 3), 0), std::logic_error);
    CHECK_THROWS_AS(make_task(text_config(path, 8, 0.0, 3), 0), std::logic_error);
    CHECK_THROWS_AS(make_task(text_config("", 8, 0.1, 3), 0), std::logic_error);
    CHECK_THROWS_AS(make_task(text_config((dir / "missing").string(), 8, 0.1, 3), 0), io_error);
    // A file changed since the loader recorded it.
    task_config c = text_config(path, 8, 0.1, 3);
    c.size = 251;
    CHECK_THROWS_AS(make_task(c, 0), config_error);
    c.size = 250;
    c.sha256 = std::string(64, '0');
    CHECK_THROWS_AS(make_task(c, 0), config_error);
    c.sha256 = sha256_hex(positional_bytes());
    CHECK_NOTHROW(make_task(c, 0));
}

TEST_CASE("text: unigram and bigram baselines match an independent computation", "[text]") {
    SECTION("one repeated byte: closed form") {
        // n = 100, f = 0.1: train 80 bytes 'x', test 10; T = 3: 3 windows, 9 bytes predicted, all 'x'.
        const std::string bytes(100, 'x');
        const baseline_losses b = byte_baselines(bytes, split_text(100, 0.1), 3, 3);
        CHECK(b.unigram == Approx(-std::log(81.0 / 336.0)).epsilon(1e-12));  // (80 + 1) / (80 + 256)
        CHECK(b.bigram == Approx(-std::log(80.0 / 335.0)).epsilon(1e-12));   // 79 pairs xx, all from x
    }
    SECTION("a tiny file written here, counted with maps") {
        const std::string bytes = "the cat sat on the mat; the bat ate the hat. the end of the tale. cat, mat, bat!";
        const std::size_t n = bytes.size();
        const text_split s = split_text(n, 0.2);
        const int T = 4;
        const std::size_t windows = eval_windows_that_fit(s.e, T);
        REQUIRE(windows > 0);
        const std::string train = bytes.substr(0, s.train_bytes()), test = bytes.substr(s.test_begin());
        std::map<char, double> uni;
        std::map<std::string, double> pairs;
        std::map<char, double> from;
        for (char ch : train) uni[ch] += 1;
        for (std::size_t i = 0; i + 1 < train.size(); ++i) {
            pairs[train.substr(i, 2)] += 1;
            from[train[i]] += 1;
        }
        double u = 0, bi = 0;
        const std::size_t predicted = windows * T;
        for (std::size_t i = 1; i <= predicted; ++i) {
            u += -std::log((uni[test[i]] + 1) / (static_cast<double>(train.size()) + 256));
            bi += -std::log((pairs[test.substr(i - 1, 2)] + 1) / (from[test[i - 1]] + 256));
        }
        const baseline_losses b = byte_baselines(bytes, s, T, windows);
        CHECK(b.unigram == Approx(u / static_cast<double>(predicted)).epsilon(1e-12));
        CHECK(b.bigram == Approx(bi / static_cast<double>(predicted)).epsilon(1e-12));
        // The task reports the baselines of its own test set.
        temp_dir dir;
        write_text(dir / "tiny.txt", bytes);
        auto tk = make_task(text_config((dir / "tiny.txt").string(), T, 0.2, 100), 0);
        REQUIRE(tk->baselines());
        CHECK(tk->baselines()->unigram == b.unigram);
        CHECK(tk->baselines()->bigram == b.bigram);
    }
}

TEST_CASE("text: the loader records the file and refuses bad keys", "[text]") {
    const experiment_spec spec = parse_spec(tiny_text_spec("t", text_fixture), "t.yaml");
    const task_config& t = spec.runs.at(0).config.task;
    CHECK(t.path == text_fixture);
    CHECK(t.size == 32615);
    CHECK(t.sha256 == "9d36be788cb464965a45e504ea077d612feaacc52f7c84a218d4a47a4072c7a8");
    CHECK(t.holdout == 0.05);
    // config.yaml holds them and reads back to the same configuration.
    const std::string yaml = run_config_to_yaml(spec.runs[0].config);
    CHECK_THAT(yaml, Contains("  path: \"" + text_fixture + "\"\n"));
    CHECK_THAT(yaml, Contains("  size: 32615\n"));
    CHECK_THAT(yaml, !Contains("vocab"));
    CHECK(run_config_to_yaml(run_config_from_yaml(yaml, "config.yaml")) == yaml);

    struct bad_case {
        std::string extra, key, words;
    };
    const std::vector<bad_case> cases = {
        {"    vocab: 256\n", "base.task.vocab", "has no effect"},
        {"    holdout: 0.5\n", "base.task.holdout", "0 < task.holdout < 0.5"},
        {"    holdout: 0\n", "base.task.holdout", "a number > 0"},
        {"    sha256: abc\n", "base.task.sha256", "64 hexadecimal digits"},
        {"    size: 12\n", "base.task.size", "not the 12 the spec says"},
    };
    for (const bad_case& c : cases) {
        INFO(c.extra);
        try {
            parse_spec(tiny_text_spec("t", text_fixture, c.extra), "t.yaml");
            FAIL("accepted");
        } catch (const config_error& e) {
            CHECK_THAT(e.what(), StartsWith("t.yaml:"));
            CHECK_THAT(e.what(), Contains(": " + c.key + ": "));
            CHECK_THAT(e.what(), Contains(c.words));
        }
    }
    // An upper-case checksum is the same checksum.
    std::string upper = t.sha256;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char ch) { return std::toupper(ch); });
    CHECK_NOTHROW(parse_spec(tiny_text_spec("t", text_fixture, "    sha256: " + upper + "\n"), "t.yaml"));
}

TEST_CASE("text: a bad file is one error with file, line and key, from validate and run, and nothing is written",
          "[text][cli]") {
    temp_dir dir;
    write_text(dir / "empty.txt", "");
    write_text(dir / "short.txt", std::string(200, 'a'));  // e = 10: no window of 17 bytes
    fs::create_directory(dir / "a_directory");
    struct bad_case {
        const char* what;
        std::string path, extra;
        int line;
        std::string key, words;
    };
    const std::vector<bad_case> cases = {
        {"missing", (dir / "missing.txt").string(), "", 6, "base.task.path", "cannot read"},
        {"unreadable (a directory)", (dir / "a_directory").string(), "", 6, "base.task.path", "is a directory"},
        {"empty", (dir / "empty.txt").string(), "", 6, "base.task.path", "is empty"},
        {"too short", (dir / "short.txt").string(), "", 7, "base.task.seq_len", "no evaluation window fits"},
        {"too short to train", (dir / "short.txt").string(), "    seq_len: 196\n    holdout: 0.01\n", 7,
         "base.task.seq_len", "no training window fits"},
        {"wrong sha256", text_fixture, "    sha256: " + std::string(64, 'e') + "\n", 9, "base.task.sha256",
         "not the eeee"},
    };
    for (const bad_case& c : cases) {
        INFO(c.what);
        std::string text = tiny_text_spec("bad", c.path, c.extra);
        if (c.extra.find("seq_len") != std::string::npos) {  // the case's own seq_len, on line 7
            text.replace(text.find("    seq_len: 16\n"), 16, "");
            text.replace(text.find("    test_examples: 8\n"), 21, "");
            text.replace(text.find(c.extra), c.extra.size(), c.extra + "    test_examples: 8\n");
        }
        const fs::path spec = dir / "bad.yaml", out = dir / "results";
        write_text(spec, text);
        for (const std::vector<std::string>& args :
             {std::vector<std::string>{"validate", spec.string()},
              std::vector<std::string>{"run", spec.string(), "--out", out.string()}}) {
            INFO(args[0]);
            const auto r = run_cli(args);
            CHECK(r.code == 2);
            const std::string msg = single_line_of(r);
            CHECK_THAT(msg, StartsWith("attnlab: error: " + spec.string() + ":" + std::to_string(c.line) + ": " +
                                       c.key + ": "));
            CHECK_THAT(msg, Contains(c.words));
            CHECK_FALSE(present(out));
        }
    }
}

TEST_CASE("text: a relative task.path resolves against the spec's folder, from any working directory", "[text][cli]") {
    temp_dir dir;
    fs::create_directories(dir / "experiments");
    fs::create_directories(dir / "data");
    fs::create_directories(dir / "elsewhere");
    fs::copy_file(text_fixture, dir / "data" / "corpus.txt");
    const fs::path spec = dir / "experiments" / "rel.yaml";
    write_text(spec, tiny_text_spec("rel", "../data/corpus.txt"));
    auto r = run_cli({"run", spec.string(), "--out", (dir / "results").string()}, dir / "elsewhere");
    INFO(r.err);
    REQUIRE(r.code == 0);
    const std::string config = read_text(dir / "results" / "rel" / "runs" / "seed=0" / "config.yaml");
    const std::string abs = fs::absolute(dir / "data" / "corpus.txt").lexically_normal().string();
    CHECK_THAT(config, Contains("  path: \"" + abs + "\"\n"));
    CHECK_THAT(config, Contains("  size: 32615\n"));
    CHECK_THAT(config, Contains("  sha256: \"9d36be788cb464965a45e504ea077d612feaacc52f7c84a218d4a47a4072c7a8\"\n"));
    // summarize reads the spec as run from the results folder: its relative path still resolves.
    r = run_cli({"summarize", (dir / "results" / "rel").string()}, dir / "elsewhere");
    CHECK(r.code == 0);
    // The same relative path seen from the working directory does not exist: run from the spec's folder it does.
    r = run_cli({"validate", "rel.yaml"}, dir / "experiments");
    CHECK(r.code == 0);
}

TEST_CASE("text: the same bytes at another path are the same run; other bytes are another", "[text][cli]") {
    // config_differences on two config.yaml texts.
    const std::string a = "task:\n  kind: text\n  path: \"/a/f.txt\"\n  sha256: \"00\"\n  size: 5\n";
    CHECK(config_differences(a, a).empty());
    const auto moved =
        config_differences(a, "task:\n  kind: text\n  path: \"/b/f.txt\"\n  sha256: \"00\"\n  size: 5\n");
    CHECK(moved.empty());
    CHECK(same_run_config(a, "task:\n  kind: text\n  path: \"/b/f.txt\"\n  sha256: \"00\"\n  size: 5\n"));
    const auto other =
        config_differences(a, "task:\n  kind: text\n  path: \"/b/f.txt\"\n  sha256: \"01\"\n  size: 5\n");
    REQUIRE(other.size() == 1);
    CHECK(other[0].key == "task.sha256");
    // Without the size and checksum on both sides, the path is compared.
    CHECK(config_differences("task:\n  path: \"/a\"\n", "task:\n  path: \"/b\"\n").size() == 1);

    temp_dir dir;
    fs::create_directories(dir / "one");
    fs::create_directories(dir / "two");
    fs::copy_file(text_fixture, dir / "one" / "f.txt");
    fs::copy_file(text_fixture, dir / "two" / "f.txt");
    write_text(dir / "two" / "g.txt", read_text(text_fixture) + "Amen.\n");
    const fs::path spec = dir / "s.yaml", out = dir / "results";
    write_text(spec, tiny_text_spec("moved", (dir / "one" / "f.txt").string()));
    REQUIRE(run_cli({"run", spec.string(), "--out", out.string()}).code == 0);
    write_text(spec, tiny_text_spec("moved", (dir / "two" / "f.txt").string()));
    auto r = run_cli({"run", spec.string(), "--out", out.string()});
    CHECK(r.code == 0);
    CHECK_THAT(r.err, Contains("already done"));
    write_text(spec, tiny_text_spec("moved", (dir / "two" / "g.txt").string()));
    r = run_cli({"run", spec.string(), "--out", out.string()});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Contains("task.sha256"));
}

TEST_CASE("text: summarize works without the corpus, from the size and sha256 the runs recorded", "[text][cli]") {
    // A fresh clone of a repository holds the results but not the corpus they were trained on.
    temp_dir dir;
    fs::create_directories(dir / "data");
    const fs::path corpus = dir / "data" / "f.txt", spec = dir / "s.yaml", out = dir / "results";
    fs::copy_file(text_fixture, corpus);
    write_text(spec, tiny_text_spec("gone", corpus.string()));
    REQUIRE(run_cli({"run", spec.string(), "--out", out.string()}).code == 0);
    const fs::path sweep = out / "gone";
    const std::string summary = read_text(sweep / "summary.csv"), table = read_text(sweep / "table.md");
    REQUIRE_THAT(summary, Contains(sha256_hex(read_text(corpus))));

    fs::remove(corpus);
    const cli_result r = run_cli({"summarize", sweep.string()});
    CHECK(r.code == 0);
    CHECK_THAT(r.err, Contains(corpus.string() + " is not on this machine: its size and sha256 are taken from the "
                                                 "runs' config.yaml"));
    CHECK_THAT(r.err, Contains("1/1 runs done"));
    CHECK(read_text(sweep / "summary.csv") == summary);  // the same run, the same file recorded
    CHECK(read_text(sweep / "table.md") == table);
    // Training still needs the file.
    const cli_result again = run_cli({"run", spec.string(), "--out", (dir / "other").string()});
    CHECK(again.code == 2);
    CHECK_THAT(again.err, Contains("cannot read the text file"));
    // Other bytes at the same path are another file: the run no longer matches.
    write_text(corpus, read_text(text_fixture) + "Amen.\n");
    const cli_result other = run_cli({"summarize", sweep.string()});
    CHECK(other.code == 1);
    CHECK_THAT(other.err, Contains("task.sha256"));
}

TEST_CASE("text: outputs leave seq_acc empty and report bits per byte and the baselines", "[text][cli]") {
    temp_dir dir;
    const fs::path spec = dir / "s.yaml", out = dir / "results";
    write_text(spec, tiny_text_spec("outs", text_fixture));
    auto r = run_cli({"run", spec.string(), "--out", out.string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.err, Contains("bits/byte"));
    const fs::path sweep = out / "outs", run = sweep / "runs" / "seed=0";

    // metrics.csv: the seq_acc cell (5th) of every row is empty.
    const auto metrics = lines_of(read_text(run / "metrics.csv"));
    REQUIRE(metrics.size() > 1);
    for (std::size_t i = 1; i < metrics.size(); ++i) CHECK(csv_fields(metrics[i]).at(4).empty());

    // The baselines recorded are those of the file's test set, computed here.
    const std::string bytes = read_text(text_fixture);
    const text_split s = split_text(bytes.size(), 0.05);
    const baseline_losses want = byte_baselines(bytes, s, 16, 8);
    const auto result = read_text(run / "result.yaml");
    CHECK_THAT(result, Contains("baselines: {unigram_test_loss: "));

    // summary.csv: seq_acc empty, bits_per_byte = loss / ln 2, the baselines.
    const auto summary = lines_of(read_text(sweep / "summary.csv"));
    REQUIRE(summary.size() == 2);
    const auto header = csv_fields(summary[0]), row = csv_fields(summary[1]);
    REQUIRE(header.size() == row.size());
    std::map<std::string, std::string> cell;
    for (std::size_t i = 0; i < header.size(); ++i) cell[header[i]] = row[i];
    for (const char* when : {"final_val_", "final_test_", "best_val_", "best_test_"}) {
        INFO(when);
        CHECK(cell.at(std::string(when) + "seq_acc").empty());
        const double loss = std::stod(cell.at(std::string(when) + "loss"));
        CHECK(std::stod(cell.at(std::string(when) + "bits_per_byte")) == Approx(loss / std::log(2.0)).epsilon(1e-12));
    }
    CHECK(std::stod(cell.at("unigram_test_loss")) == Approx(want.unigram).epsilon(1e-12));
    CHECK(std::stod(cell.at("bigram_test_loss")) == Approx(want.bigram).epsilon(1e-12));
    CHECK(std::stod(cell.at("unigram_test_bits_per_byte")) == Approx(want.unigram / std::log(2.0)).epsilon(1e-12));
    CHECK(std::stod(cell.at("bigram_test_bits_per_byte")) == Approx(want.bigram / std::log(2.0)).epsilon(1e-12));
    CHECK(cell.at("task.vocab").empty());
    CHECK(cell.at("task.size") == "32615");

    // table.md: the baselines on top, a bits_per_byte column, and for text
    // runs only no column that cannot apply (solved, seq_acc).
    const std::string table = read_text(sweep / "table.md");
    CHECK_THAT(table, Contains("Baselines, for scale"));
    CHECK_THAT(table,
               Contains("| runs | diverged | val_loss | token_acc | token_acc by seed | loss | bits_per_byte |"));
    CHECK_THAT(table, !Contains("seq_acc |") && !Contains("solved |"));
    CHECK_THAT(table, !Contains("nan"));
    CHECK_THAT(table, Contains("| 1 | 0 | "));  // runs, diverged, then the validation loss
    CHECK_THAT(table, Contains("(s0: "));       // each seed's bits per byte

    // The run's provenance and facts: result.yaml's build, the checkpoint's metadata.
    CHECK_THAT(result, Contains("\nbuild: {commit: \""));
    CHECK_THAT(result, Contains(", threads: "));
    const std::string ckpt = read_text(run / "model.safetensors");
    CHECK_THAT(ckpt.substr(0, 4096), Contains("\"vocab\":\"256\"") && Contains("\"max_positions\":\"16\"") &&
                                         Contains("\"isa\":\"") && Contains("\"commit\":\""));

    // generate: greedy decoding gives the same bytes in both forms; a seed fixes a sample.
    auto generate = [&](const std::vector<std::string>& extra) {
        std::vector<std::string> args = {"generate", run.string(), "--prompt", "In the", "--tokens", "12"};
        args.insert(args.end(), extra.begin(), extra.end());
        return run_cli(args);
    };
    const auto greedy_rec = generate({"--temperature", "0", "--form", "recurrent"});
    const auto greedy_par = generate({"--temperature", "0", "--form", "parallel"});
    INFO(greedy_rec.err);
    REQUIRE(greedy_rec.code == 0);
    REQUIRE(greedy_par.code == 0);
    CHECK(greedy_rec.out == greedy_par.out);
    CHECK(greedy_rec.out.size() == 13);  // 12 bytes and a newline
    CHECK_THAT(greedy_rec.err, Contains("12 tokens in") && Contains("recurrent form: per token median"));
    CHECK(generate({"--seed", "3"}).out == generate({"--seed", "3"}).out);
    const auto bad = generate({"--form", "sideways"});
    CHECK(bad.code == 2);

    // eval: the last test row's loss and accuracy, bits per byte instead of a seq_acc.
    std::vector<std::string> last_test;
    for (std::size_t i = 1; i < metrics.size(); ++i)
        if (csv_fields(metrics[i]).at(1) == "test") last_test = csv_fields(metrics[i]);
    REQUIRE(last_test.size() > 3);
    const auto e = run_cli({"eval", run.string()});
    INFO(e.err);
    REQUIRE(e.code == 0);
    CHECK_THAT(e.out, StartsWith("test loss " + last_test[2] + " token_acc " + last_test[3] + " bits_per_byte "));
    CHECK_THAT(e.out, !Contains("seq_acc"));
    const double bits = std::stod(e.out.substr(e.out.rfind(' ') + 1));
    CHECK(bits == Approx(std::stod(last_test[2]) / std::log(2.0)).epsilon(1e-6));
}

TEST_CASE("text: the memory estimate holds the file and only the evaluation windows that fit", "[text]") {
    const run_config base = parse_spec(tiny_text_spec("t", text_fixture), "t.yaml").runs.at(0).config;
    const auto scratch = [](const run_config& c) { return estimate_training_memory(c, 1).scratch; };
    // 10 more bytes of file, the same windows: 10 more bytes.
    run_config bigger = base;
    bigger.task.size += 10;
    CHECK(scratch(bigger) == scratch(base) + 10);
    // Asking for more test windows than fit (1629 / 16 = 101) costs no more than all that fit.
    run_config all = base, more = base;
    all.task.test_examples = 101;
    more.task.test_examples = 100000;
    CHECK(scratch(more) == scratch(all));
    CHECK(scratch(all) == scratch(base) + (101 - 8) * 16 * 2 * sizeof(std::int32_t));  // tokens and targets
}

TEST_CASE("text: a tiny model learns more than the unigram statistics of the text_fixture", "[text][learning]") {
    run_config cfg =
        tiny_config({.d_model = 32, .steps = 300, .batch = 16, .lr = 1e-2, .warmup = 20, .eval_every = 300});
    cfg.task = text_config(text_fixture, 32, 0.05, 32);
    cfg.model.mlp_hidden = resolved_mlp_hidden(cfg.model);
    const run_result r = train_run(cfg, {});
    REQUIRE(r.status == run_status::ok);
    REQUIRE(r.baselines);
    INFO("test loss " << r.final_test.loss << ", unigram " << r.baselines->unigram << ", bigram "
                      << r.baselines->bigram);
    CHECK(r.final_test.loss < r.baselines->unigram);
    CHECK(std::isnan(r.final_test.seq_acc));
}

TEST_CASE("text: the file is read in pieces that stop when a stop is asked for, and hashed the same", "[text]") {
    const task_config c = text_config(text_fixture, 16, 0.05, 8);
    const std::atomic<bool> go{false}, stop{true};
    CHECK(make_text_task(c, 0, &go)->vocab_size() == 256);
    CHECK_THROWS_AS(make_text_task(c, 0, &stop), read_interrupted);
    // The hash of the pieces is the hash of the whole, whatever the pieces.
    const std::string bytes = read_text(text_fixture);
    for (const std::size_t piece : {1, 63, 64, 65, 1000}) {
        sha256_hasher h;
        for (std::size_t at = 0; at < bytes.size(); at += piece)
            h.update(bytes.data() + at, std::min(piece, bytes.size() - at));
        CHECK(h.hex() == sha256_hex(bytes));
    }
}
