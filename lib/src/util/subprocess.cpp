#include "attnlab/util/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace attnlab {

namespace {
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& set,
                                           const std::vector<std::string>& unset) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string entry(*e);
        const std::string name = entry.substr(0, entry.find('='));
        bool drop = false;
        for (const auto& u : unset) drop = drop || u == name;
        for (const auto& s : set) drop = drop || s.first == name;
        if (!drop) env.push_back(entry);
    }
    for (const auto& s : set) env.push_back(s.first + "=" + s.second);
    return env;
}
}  // namespace

process_output run_process(const std::vector<std::string>& argv,
                           const std::vector<std::pair<std::string, std::string>>& set,
                           const std::vector<std::string>& unset) {
    if (argv.empty()) throw std::invalid_argument("run_process: empty command");
    std::vector<std::string> env = child_environment(set, unset);
    std::vector<char*> cargv, cenv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);

    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        execve(cargv[0], cargv.data(), cenv.data());
        const std::string msg = "cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
        (void)!write(2, msg.data(), msg.size());
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    process_output res;
    // Read both pipes until both close (a full pipe would block the child).
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&res.out, &res.err};
    int open_fds = 2;
    char buf[4096];
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                sinks[i]->append(buf, static_cast<size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return res;
}

}  // namespace attnlab
