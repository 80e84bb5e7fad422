// Resume states of interrupted runs (runs/<run_id>/resume.state): a small
// binary format with a checksum, written atomically.
#include "attnlab/train/resume_state.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <type_traits>

#include "attnlab/io/files.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

namespace {

static_assert(std::endian::native == std::endian::little, "resume states are written as little-endian bytes");
constexpr const char* resume_magic = "attnlab-resume\n";
constexpr std::uint32_t resume_version = 2;  // 2: validation metrics in the result

class byte_writer {
public:
    template <class V>
    void put(V v) {
        static_assert(std::is_trivially_copyable_v<V>);
        out.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    void put_string(const std::string& s) {
        put<std::uint64_t>(s.size());
        out += s;
    }
    void put_floats(const std::vector<float>& v) {
        put<std::uint64_t>(v.size());
        out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    }
    void put_metrics(const eval_metrics& m) {
        put(m.loss);
        put(m.token_acc);
        put(m.seq_acc);
    }
    std::string out;
};

class byte_reader {
public:
    byte_reader(const std::string& bytes, std::size_t end, const std::string& label)
        : bytes_(bytes), end_(end), label_(label) {}
    template <class V>
    V get() {
        V v;
        need(sizeof v);
        std::memcpy(&v, bytes_.data() + at_, sizeof v);
        at_ += sizeof v;
        return v;
    }
    // An int64 of the file restoring the field `what` of type T: refused when
    // T cannot hold it (a cast would keep its low bits only).
    template <class T>
    T get_int(const char* what) {
        const auto v = get<std::int64_t>();
        if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
            fail(std::string(what) + " " + std::to_string(v) + " out of range");
        return static_cast<T>(v);
    }
    std::string get_string() {
        const auto n = get<std::uint64_t>();
        need(n);
        std::string s = bytes_.substr(at_, n);
        at_ += n;
        return s;
    }
    std::vector<float> get_floats() {
        const auto n = get<std::uint64_t>();
        if (n > (end_ - at_) / sizeof(float)) fail("truncated");
        std::vector<float> v(n);
        if (n > 0) std::memcpy(v.data(), bytes_.data() + at_, n * sizeof(float));  // v.data() is null when n is 0
        at_ += n * sizeof(float);
        return v;
    }
    eval_metrics get_metrics() {
        eval_metrics m;
        m.loss = get<double>();
        m.token_acc = get<double>();
        m.seq_acc = get<double>();
        return m;
    }
    bool at_end() const { return at_ == end_; }
    [[noreturn]] void fail(const std::string& what) const { throw io_error(label_ + ": " + what); }

private:
    void need(std::uint64_t n) const {
        if (n > end_ - at_) fail("truncated");
    }
    const std::string& bytes_;
    std::size_t at_ = 0, end_;
    const std::string& label_;
};

}  // namespace

std::uint64_t resume_checksum(const char* p, std::size_t n) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::size_t i = 0; i < n; ++i) {
        h ^= static_cast<unsigned char>(p[i]);
        h *= 0x100000001b3ULL;
    }
    return h;
}

std::string train_state_encode(const train_state& st, const std::string& config_yaml) {
    byte_writer w;
    w.out = resume_magic;
    w.put(resume_version);
    w.put_string(config_yaml);
    w.put<std::int64_t>(st.step);
    w.put<std::int64_t>(st.adam_steps);
    w.put<std::int64_t>(st.threads);
    const run_result& r = st.result;
    w.put<std::int32_t>(static_cast<std::int32_t>(r.status));
    w.put_string(r.reason);
    w.put<std::int64_t>(r.steps);
    w.put_metrics(r.final_val);
    w.put_metrics(r.final_test);
    w.put<std::int64_t>(r.best_step);
    w.put_metrics(r.best_val);
    w.put_metrics(r.best_test);
    w.put(r.wall_s);
    w.put<std::uint64_t>(r.params);
    w.put<std::int64_t>(r.nonpositive_denominator_steps);
    w.put<std::int64_t>(r.first_nonpositive_step);
    const train_window& win = st.window;
    w.put(win.loss_sum);
    w.put(win.token_acc_sum);
    w.put(win.seq_right);
    w.put<std::int64_t>(win.answers);
    w.put<std::int64_t>(win.examples);
    w.put(win.grad_norm_sum);
    w.put<std::int64_t>(win.steps);
    w.put(win.seconds);
    w.put_floats(st.params);
    w.put_floats(st.adam_m);
    w.put_floats(st.adam_v);
    w.put(resume_checksum(w.out.data(), w.out.size()));
    return std::move(w.out);
}

train_state train_state_decode(const std::string& bytes, const std::string& label, const std::string& config_yaml) {
    const std::size_t magic_len = std::strlen(resume_magic);
    if (bytes.size() < magic_len + sizeof(std::uint64_t) || bytes.compare(0, magic_len, resume_magic) != 0)
        throw io_error(label + ": not a resume state of attnlab");
    const std::size_t body = bytes.size() - sizeof(std::uint64_t);
    std::uint64_t sum;
    std::memcpy(&sum, bytes.data() + body, sizeof sum);
    if (sum != resume_checksum(bytes.data(), body)) throw io_error(label + ": checksum mismatch (a damaged file)");
    byte_reader in(bytes, body, label);
    for (std::size_t i = 0; i < magic_len; ++i) in.get<char>();
    if (const auto v = in.get<std::uint32_t>(); v != resume_version)
        in.fail("version " + std::to_string(v) + ", this attnlab reads version " + std::to_string(resume_version));
    if (in.get_string() != config_yaml) in.fail("saved for another config.yaml");
    train_state st;
    st.step = in.get_int<int>("step");
    st.adam_steps = in.get_int<long>("adam steps");
    st.threads = in.get_int<int>("threads");
    run_result& r = st.result;
    const auto status = in.get<std::int32_t>();
    if (status < 0 || status > static_cast<std::int32_t>(run_status::interrupted)) in.fail("bad status");
    r.status = static_cast<run_status>(status);
    r.reason = in.get_string();
    r.steps = in.get_int<int>("result steps");
    r.final_val = in.get_metrics();
    r.final_test = in.get_metrics();
    r.best_step = in.get_int<int>("best step");
    r.best_val = in.get_metrics();
    r.best_test = in.get_metrics();
    r.wall_s = in.get<double>();
    r.params = static_cast<std::size_t>(in.get<std::uint64_t>());
    r.nonpositive_denominator_steps = in.get_int<long>("nonpositive denominator steps");
    r.first_nonpositive_step = in.get_int<int>("first nonpositive step");
    train_window& win = st.window;
    win.loss_sum = in.get<double>();
    win.token_acc_sum = in.get<double>();
    win.seq_right = in.get<double>();
    win.answers = in.get_int<long>("window answers");
    win.examples = in.get_int<long>("window examples");
    win.grad_norm_sum = in.get<double>();
    win.steps = in.get_int<int>("window steps");
    win.seconds = in.get<double>();
    st.params = in.get_floats();
    st.adam_m = in.get_floats();
    st.adam_v = in.get_floats();
    if (!in.at_end()) in.fail("trailing bytes");
    if (st.step < 0 || st.adam_m.size() != st.params.size() || st.adam_v.size() != st.params.size())
        in.fail("inconsistent sizes");
    return st;
}

void train_state_save(const std::string& path, const train_state& st, const std::string& config_yaml) {
    write_file_atomic(path, train_state_encode(st, config_yaml));
}

std::uint64_t resume_state_max_bytes(std::size_t params, std::size_t config_bytes) {
    return 3 * (8 + 4 * static_cast<std::uint64_t>(params)) + config_bytes + (std::uint64_t{64} << 10);
}

std::optional<train_state> train_state_load(const std::string& path, const std::string& config_yaml,
                                            std::uint64_t max_bytes) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return std::nullopt;
    return train_state_decode(read_input(path, {"a resume.state of this run", max_bytes}), path, config_yaml);
}

}  // namespace attnlab
