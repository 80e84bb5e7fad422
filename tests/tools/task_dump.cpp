// attnlab_task_dump: the data of a run as attnlab makes it, written as .npy
// files that python/tests/test_data.py compares, token for token, with the
// Python package's regenerated data (python/attnlab/data.py).
//
//   attnlab_task_dump CONFIG.yaml|RUN_DIR OUT_DIR [TRAIN_BATCHES]
//
// The task is built as a training run builds it (make_task with the config's
// task and seed). OUT_DIR receives:
//   test_tokens.npy, test_targets.npy    int32 (test_examples, T_test)
//   val_tokens.npy, val_targets.npy      int32 (val_examples, T_train)
//   train_tokens.npy, train_targets.npy  int32 (TRAIN_BATCHES, train.batch, T_train):
//                                        the batches of steps 1..TRAIN_BATCHES
//                                        (default 3)
//   sizes.txt                            vocab_size, train_seq_len, test_seq_len,
//                                        one "name value" per line
//   rng.txt                              raw draws of attnlab's rng (see dump_rng)
// Targets hold no_target (-1) off the answer positions.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/spec/spec.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/util/rng.hpp"

using namespace attnlab;

namespace {

// A little-endian int32 array in NumPy's .npy format, version 1.0: magic,
// version, header length, a dict literal padded with spaces to a multiple of
// 64 bytes and ended by '\n', then the raw data. Assumes a little-endian host.
void write_npy_int32(const std::filesystem::path& path, const std::vector<int>& shape,
                     const std::vector<std::int32_t>& values) {
    std::string dims;
    for (int d : shape) dims += std::to_string(d) + ", ";
    if (shape.size() > 1) dims.erase(dims.size() - 2);  // (a, b) but (a,)
    std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (" + dims + "), }";
    const std::size_t preamble = 10;  // magic (6), version (2), header length (2)
    while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::ofstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot write " + path.string());
    f.write("\x93NUMPY\x01\x00", 8);
    const auto n = static_cast<std::uint16_t>(header.size());
    f.put(static_cast<char>(n & 0xFF));
    f.put(static_cast<char>(n >> 8));
    f << header;
    f.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(std::int32_t)));
    if (!f) throw std::runtime_error("error writing " + path.string());
}

run_config read_config(const std::filesystem::path& arg) {
    const std::filesystem::path file = std::filesystem::is_directory(arg) ? arg / "config.yaml" : arg;
    return run_config_from_yaml_file(file.string());
}

// Raw draws, one "name value" per line, values printed to round-trip:
// derive_seed(seed, 7); from rng(seed): 4 next_u64, 4 uniform, 3 uniform_int
// in [-5, 5], 5 normal (an odd count, so the Box-Muller spare is used too).
void dump_rng(const std::filesystem::path& path, std::uint64_t seed) {
    std::ofstream f(path);
    f << "derive_seed " << derive_seed(seed, 7) << "\n";
    rng r(seed);
    for (int i = 0; i < 4; ++i) f << "next_u64 " << r.next_u64() << "\n";
    char buf[64];
    for (int i = 0; i < 4; ++i) {
        std::snprintf(buf, sizeof buf, "%.17g", r.uniform());
        f << "uniform " << buf << "\n";
    }
    for (int i = 0; i < 3; ++i) f << "uniform_int " << r.uniform_int(-5, 5) << "\n";
    for (int i = 0; i < 5; ++i) {
        std::snprintf(buf, sizeof buf, "%.17g", r.normal());
        f << "normal " << buf << "\n";
    }
    if (!f) throw std::runtime_error("error writing " + path.string());
}

int dump(const run_config& cfg, const std::filesystem::path& dir, int train_batches) {
    std::filesystem::create_directories(dir);
    auto data = make_task(cfg.task, static_cast<std::uint64_t>(cfg.seed));

    const batch& test = data->test_set();  // (N, T_test)
    write_npy_int32(dir / "test_tokens.npy", {test.B, test.T}, test.tokens);
    write_npy_int32(dir / "test_targets.npy", {test.B, test.T}, test.targets);
    const batch& val = data->val_set();  // (N, T_train)
    write_npy_int32(dir / "val_tokens.npy", {val.B, val.T}, val.tokens);
    write_npy_int32(dir / "val_targets.npy", {val.B, val.T}, val.targets);

    // (K, B, T_train): the batches of steps 1..K, as the trainer draws them.
    const int B = cfg.train.batch, T = data->train_seq_len();
    std::vector<std::int32_t> tokens, targets;
    batch b;
    for (int k = 0; k < train_batches; ++k) {
        data->next_train_batch(b, B);
        tokens.insert(tokens.end(), b.tokens.begin(), b.tokens.end());
        targets.insert(targets.end(), b.targets.begin(), b.targets.end());
    }
    write_npy_int32(dir / "train_tokens.npy", {train_batches, B, T}, tokens);
    write_npy_int32(dir / "train_targets.npy", {train_batches, B, T}, targets);

    std::ofstream sizes(dir / "sizes.txt");
    sizes << "vocab_size " << data->vocab_size() << "\ntrain_seq_len " << data->train_seq_len() << "\ntest_seq_len "
          << data->test_seq_len() << "\n";
    if (!sizes) throw std::runtime_error("error writing sizes.txt");
    dump_rng(dir / "rng.txt", static_cast<std::uint64_t>(cfg.seed));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3 && argc != 4) {
        std::fprintf(stderr, "usage: %s CONFIG.yaml|RUN_DIR OUT_DIR [TRAIN_BATCHES]\n", argv[0]);
        return 2;
    }
    try {
        const int train_batches = argc == 4 ? std::stoi(argv[3]) : 3;
        if (train_batches < 0) throw std::invalid_argument("TRAIN_BATCHES must be >= 0");
        return dump(read_config(argv[1]), argv[2], train_batches);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnlab_task_dump: %s\n", e.what());
        return 1;
    }
}
