// attnlab_crosscheck_dump: one forward + backward of the attnlab model on one
// training batch, written to files that reference/crosscheck.py recomputes in
// PyTorch (float64) and compares, as llm.c checks its C code against PyTorch.
//
//   attnlab_crosscheck_dump CONFIG.yaml OUT_DIR float|double
//   attnlab_crosscheck_dump --variants
//
// --variants prints the variant table as JSON (variants_json(), what
// `attnlab variants --json` prints), from which crosscheck.py makes its
// cases, so a new row is cross-checked without another list.
//
// The model is built as a training run builds it (vocabulary and longest input
// from the task), initialised with init_params(seed), then PERTURBED: every
// parameter gets + 0.3 * N(0, 1) drawn from attnlab's rng (stream
// derive_seed(seed, perturb_stream)), so that gains, biases and gates are not
// at their trivial init values and every gradient path carries signal. The
// perturbed values are drawn in double; the float model holds them rounded.
//
// OUT_DIR receives:
//   model.safetensors        the parameters as the float model holds them (F32,
//                            attnlab's own checkpoint writer)
//   model_f64.safetensors    double only: the exact double parameters (F64)
//   batch.safetensors        tokens, targets: I32 [B, T], no target = -1
//   grads.safetensors        d(mean loss)/d(param), parameter names, F32 or F64
//   config.yaml              the resolved config as attnlab read it (run_config_to_yaml)
//   out.json                 loss, answer rows b*T+t, answer targets, the
//                            per-answer losses and the logits at the answer
//                            rows (A x V, row-major), min |z_t| of softmax sums
//
// transformer<T> keeps its logits private, so they are recovered through the
// public API: with a single answer row a and target y, the head gradient row
// y is (p_y - 1) * lnf_a (lnf_a the final RMSNorm output at a), p_y =
// exp(-loss); so lnf_a = dhead[y] / (p_y - 1) and logits_a = head.weight lnf_a.
// Every float/double value is printed with max_digits10 (round-trips).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "attnlab/attention/variant_table.hpp"
#include "attnlab/io/safetensors.hpp"
#include "attnlab/model/make_model.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/util/rng.hpp"

using namespace attnlab;

namespace {

constexpr std::uint64_t perturb_stream = 0xC0FFEE;  // derive_seed stream of the perturbation
constexpr double perturb_std = 0.3;

// One tensor of a safetensors file we write ourselves (F64 and I32 are not
// what attnlab's checkpoint writer does).
struct st_tensor {
    std::string name;
    std::string dtype;  // "F32", "F64", "I32"
    std::vector<int> shape;
    std::string bytes;  // little-endian raw data (this program assumes a little-endian host)
};

template <class T>
std::string raw_bytes(const T* p, std::size_t n) {
    return std::string(reinterpret_cast<const char*>(p), n * sizeof(T));
}

template <class T>
const char* dtype_of();
template <>
const char* dtype_of<float>() {
    return "F32";
}
template <>
const char* dtype_of<double>() {
    return "F64";
}

void write_safetensors(const std::string& path, const std::vector<st_tensor>& tensors) {
    std::ostringstream h;
    h << "{\"__metadata__\":{\"format\":\"attnlab-crosscheck\"}";
    std::size_t off = 0;
    for (const auto& t : tensors) {
        h << ",\"" << t.name << "\":{\"dtype\":\"" << t.dtype << "\",\"shape\":[";
        for (std::size_t i = 0; i < t.shape.size(); ++i) h << (i ? "," : "") << t.shape[i];
        h << "],\"data_offsets\":[" << off << "," << off + t.bytes.size() << "]}";
        off += t.bytes.size();
    }
    h << "}";
    std::string header = h.str();
    while (header.size() % 8) header += ' ';
    std::ofstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot write " + path);
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xFF));
    f << header;
    for (const auto& t : tensors) f << t.bytes;
    if (!f) throw std::runtime_error("error writing " + path);
}

template <class T>
std::vector<st_tensor> param_tensors(const param_layout& layout, const std::vector<T>& flat) {
    std::vector<st_tensor> out;
    for (const auto& t : layout.tensors())
        out.push_back({t.name, dtype_of<T>(), t.shape, raw_bytes(flat.data() + t.offset, t.size)});
    return out;
}

// A JSON number; non-finite values as Python's json module reads them.
template <class T>
void json_number(std::ostream& os, T x) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x)) {
            os << "NaN";
            return;
        }
        if (std::isinf(x)) {
            os << (x > 0 ? "Infinity" : "-Infinity");
            return;
        }
    }
    os << x;
}

template <class V>
void json_list(std::ostream& os, const V& v) {
    os << "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) os << ", ";
        json_number(os, v[i]);
    }
    os << "]";
}

template <class T>
int run(const run_config& cfg, const std::filesystem::path& dir) {
    auto data = make_task(cfg.task, static_cast<std::uint64_t>(cfg.seed));
    const int V = data->vocab_size();
    transformer<double> init = make_model<double>(cfg);
    init.init_params(static_cast<std::uint64_t>(cfg.seed));
    rng r(derive_seed(static_cast<std::uint64_t>(cfg.seed), perturb_stream));
    for (double& w : init.params) w += perturb_std * r.normal();

    {
        std::ofstream y(dir / "config.yaml");
        y << run_config_to_yaml(cfg);
        if (!y) throw std::runtime_error("error writing config.yaml");
    }
    transformer<T> model = make_model<T>(cfg);
    for (std::size_t i = 0; i < model.params.size(); ++i) model.params[i] = static_cast<T>(init.params[i]);
    std::vector<float> params_f32(model.params.begin(),
                                  model.params.end());  // exact for float
    safetensors_write((dir / "model.safetensors").string(), model.layout().named_tensors(), params_f32);
    if constexpr (std::is_same_v<T, double>)
        write_safetensors((dir / "model_f64.safetensors").string(), param_tensors(model.layout(), model.params));

    batch b;
    data->next_train_batch(b, cfg.train.batch);
    const int B = b.B, Tn = b.T;
    write_safetensors((dir / "batch.safetensors").string(),
                      {{"tokens", "I32", {B, Tn}, raw_bytes(b.tokens.data(), b.tokens.size())},
                       {"targets", "I32", {B, Tn}, raw_bytes(b.targets.data(), b.targets.size())}});

    model.zero_grad();
    const T loss = model.forward(b.tokens.data(), b.targets.data(), B, Tn);
    const std::vector<int> rows = model.answer_rows();
    const std::vector<T> losses = model.answer_losses();
    const T min_abs_z = model.min_abs_denominator();
    const long nonpositive = model.nonpositive_denominator_rows();
    model.backward();
    write_safetensors((dir / "grads.safetensors").string(), param_tensors(model.layout(), model.grads));
    std::vector<T> grads = model.grads;

    // Logits at the answer rows, one single-answer forward/backward per row (see the header).
    const int A = static_cast<int>(rows.size()), C = cfg.model.d_model;
    const param_tensor& head = model.layout().find("head.weight");
    std::vector<T> logits(static_cast<std::size_t>(A) * V);
    std::vector<std::int32_t> one(b.targets.size(), no_target), answer_targets(A);
    for (int a = 0; a < A; ++a) {
        const int y = b.targets[rows[a]];
        answer_targets[a] = y;
        std::fill(one.begin(), one.end(), no_target);
        one[rows[a]] = y;
        model.zero_grad();
        const T la = model.forward(b.tokens.data(), one.data(), B, Tn);
        model.backward();
        const T scale = T(1) / (std::exp(-la) - T(1));  // 1 / (p_y - 1)
        const T* dhead_y = model.grads.data() + head.offset + static_cast<std::size_t>(y) * C;
        const T* w = model.params.data() + head.offset;
        for (int v = 0; v < V; ++v) {
            T z = 0;
            for (int c = 0; c < C; ++c) z += w[static_cast<std::size_t>(v) * C + c] * dhead_y[c] * scale;
            logits[static_cast<std::size_t>(a) * V + v] = z;
        }
    }

    std::ofstream js(dir / "out.json");
    js << std::setprecision(std::numeric_limits<T>::max_digits10);
    js << "{\n  \"precision\": \"" << (sizeof(T) == 8 ? "double" : "float") << "\",\n";
    js << "  \"B\": " << B << ",\n  \"T\": " << Tn << ",\n  \"V\": " << V << ",\n";
    js << "  \"loss\": ";
    json_number(js, loss);
    js << ",\n";
    js << "  \"min_abs_denominator\": ";
    if (std::isfinite(min_abs_z))
        js << min_abs_z;
    else
        js << "null";  // inf: no softmax sum
    js << ",\n  \"nonpositive_denominator_rows\": " << nonpositive << ",\n";
    js << "  \"grads_finite\": "
       << (std::all_of(grads.begin(), grads.end(), [](T g) { return std::isfinite(g); }) ? "true" : "false") << ",\n";
    js << "  \"answer_rows\": ";
    json_list(js, rows);
    js << ",\n";
    js << "  \"answer_targets\": ";
    json_list(js, answer_targets);
    js << ",\n";
    js << "  \"answer_losses\": ";
    json_list(js, losses);
    js << ",\n";
    js << "  \"logits\": ";
    json_list(js, logits);
    js << "\n}\n";
    if (!js) throw std::runtime_error("error writing out.json");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--variants") {
        std::fputs(variants_json().c_str(), stdout);
        return 0;
    }
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s CONFIG.yaml OUT_DIR float|double\n       %s --variants\n", argv[0], argv[0]);
        return 2;
    }
    try {
        const run_config cfg = run_config_from_yaml_file(argv[1]);
        const std::filesystem::path dir(argv[2]);
        std::filesystem::create_directories(dir);
        const std::string precision = argv[3];
        if (precision == "float") return run<float>(cfg, dir);
        if (precision == "double") return run<double>(cfg, dir);
        std::fprintf(stderr, "precision must be float or double, got '%s'\n", precision.c_str());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnlab_crosscheck_dump: %s\n", e.what());
        return 1;
    }
}
