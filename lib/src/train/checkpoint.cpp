// Saving, loading and re-scoring a run's parameters (SPEC §3 "Checkpoints").
#include "attnlab/train/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>

#include "attnlab/io/safetensors.hpp"
#include "attnlab/run/summary.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

void checkpoint_save(const std::string& path, const transformer<float>& model) {
    safetensors_write(path, model.layout(), model.params);
}

void checkpoint_load(const std::string& path, transformer<float>& model) {
    if (!std::filesystem::is_regular_file(path)) throw io_error(path + ": no such checkpoint file");
    std::vector<float> params = safetensors_read(path, model.layout());
    model.params = std::move(params);
}

bool params_finite(const transformer<float>& model) {
    return std::all_of(model.params.begin(), model.params.end(), [](float x) { return std::isfinite(x); });
}

eval_metrics evaluate_run_dir(const std::string& run_dir, attention_form form, state_layout layout) {
    namespace fs = std::filesystem;
    if (!fs::is_directory(run_dir)) throw config_error(run_dir + ": no such run directory");
    const std::string config_path = run_dir + "/config.yaml";
    if (!fs::is_regular_file(config_path))
        throw config_error(config_path + ": no such file (not a run directory of `attnlab run`?)");
    const run_config cfg = run_config_from_yaml_file(config_path);

    const std::string ckpt = run_dir + "/" + checkpoint_filename;
    if (!fs::is_regular_file(ckpt)) {
        // Say why when result.yaml knows: diverged runs have no checkpoint.
        std::string why = "the run has not finished";
        try {
            if (auto r = read_run_result(run_dir + "/result.yaml"))
                why = r->status == run_status::diverged
                          ? "the run diverged, so nothing was saved"
                          : "saved by an attnlab without checkpoints, or its parameters were not finite";
        } catch (const io_error&) {
            // a malformed result.yaml: the generic reason stands
        }
        throw io_error(ckpt + ": no such checkpoint file (" + why + ")");
    }

    // As train_run builds, sizes and scores the model.
    auto data = make_task(cfg.task, static_cast<std::uint64_t>(cfg.seed));
    transformer<float> model(cfg.model, cfg.attention, data->vocab_size(), max_seq_len(cfg.task));
    checkpoint_load(ckpt, model);
    model.set_attention_form(form, layout);
    model.reserve(std::max(cfg.train.batch, 1), std::max(data->train_seq_len(), data->test_seq_len()));
    return evaluate(model, data->test_set(), cfg.train.batch);
}

}  // namespace attnlab
