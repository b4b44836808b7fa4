// gpuobs_cupti_inject without a GPU: dlopen the built library as the CUDA
// driver would, call InitializeInjection() in a child process (it runs once
// per process), and check that a missing CUPTI or output file is one clear
// line on stderr and nothing else: no crash, no file, return value 1. And
// that the library needs nothing but libc at run time.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr const char* kInject = GPUOBS_CUPTI_INJECT;

struct Child {
  int status = -1;
  std::string err;  // all it wrote on stderr
};

// In a child: sets `env` (name, value; value nullptr unsets), dlopens the
// library, calls InitializeInjection; exits 0 when it returned 1.
Child run_injection(const std::vector<std::pair<const char*, const char*>>& env) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    for (auto& [name, value] : env) value ? ::setenv(name, value, 1) : ::unsetenv(name);
    void* h = ::dlopen(kInject, RTLD_NOW | RTLD_LOCAL);
    if (!h) ::_exit(10);
    auto init = reinterpret_cast<int (*)()>(::dlsym(h, "InitializeInjection"));
    if (!init) ::_exit(11);
    int r = init();
    ::_exit(r == 1 ? 0 : 12);
  }
  ::close(fds[1]);
  Child c;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) c.err.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  ::waitpid(pid, &c.status, 0);
  return c;
}

// An empty temporary directory, removed (with what is in it) at the end of the test.
class TempDir {
 public:
  TempDir() : path_(::mkdtemp(tmpl_) ? tmpl_ : "") {}
  ~TempDir() {
    ::unlink(file().c_str());
    ::rmdir(path_.c_str());
  }
  std::string file() const { return path_ + "/gpu-time.gt"; }

 private:
  char tmpl_[32] = "/tmp/gpuobs-inject-XXXXXX";  // before path_: path_ is made from it
  std::string path_;
};

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

TEST(CuptiInject, LibraryWasBuilt) {
  ASSERT_STRNE(kInject, "") << "gpuobs_cupti_inject was not built: CUPTI headers (cupti_activity.h) not found; "
                               "set CUDA_HOME and configure again";
  ASSERT_TRUE(exists(kInject)) << kInject;
}

TEST(CuptiInject, MissingCuptiIsOneClearLineAndTheProgramRunsOn) {
  TempDir dir;
  ASSERT_NE(dir.file(), "/gpu-time.gt");
  std::string out = dir.file();
  Child c =
      run_injection({{"GPUOBS_CUPTI_PATH", "/nonexistent/libcupti.so.13"}, {"GPUOBS_GPU_TIME_FILE", out.c_str()}});
  ASSERT_TRUE(WIFEXITED(c.status)) << "status " << c.status << ", stderr: " << c.err;
  EXPECT_EQ(WEXITSTATUS(c.status), 0) << c.err;
  EXPECT_EQ(c.err,
            "gpuobs gpu-time: cannot load CUPTI from GPUOBS_CUPTI_PATH=/nonexistent/libcupti.so.13 "
            "(/nonexistent/libcupti.so.13: cannot open shared object file: No such file or directory): "
            "GPU times are not recorded\n");
  EXPECT_FALSE(exists(out)) << "nothing is written without CUPTI";
}

TEST(CuptiInject, AFileThatIsNotCuptiIsOneClearLine) {
  // A library without the CUPTI symbols: libc itself.
  Child c = run_injection({{"GPUOBS_CUPTI_PATH", "libc.so.6"}, {"GPUOBS_GPU_TIME_FILE", "/tmp/unused.gt"}});
  ASSERT_TRUE(WIFEXITED(c.status)) << c.err;
  EXPECT_EQ(WEXITSTATUS(c.status), 0) << c.err;
  EXPECT_EQ(c.err, "gpuobs gpu-time: CUPTI has no cuptiActivityRegisterCallbacks: GPU times are not recorded\n");
}

TEST(CuptiInject, NoOutputFileIsOneClearLine) {
  Child c = run_injection({{"GPUOBS_CUPTI_PATH", "/nonexistent/libcupti.so.13"}, {"GPUOBS_GPU_TIME_FILE", nullptr}});
  ASSERT_TRUE(WIFEXITED(c.status)) << c.err;
  EXPECT_EQ(WEXITSTATUS(c.status), 0) << c.err;
  EXPECT_EQ(c.err, "gpuobs gpu-time: GPUOBS_GPU_TIME_FILE is not set: GPU times are not recorded\n");
}

TEST(CuptiInject, NeedsOnlyLibcAtRunTime) {
  std::string cmd = std::string("readelf -d ") + kInject + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << text;
  std::vector<std::string> needed;
  for (size_t at = text.find("(NEEDED)"); at != std::string::npos; at = text.find("(NEEDED)", at + 1)) {
    size_t open = text.find('[', at), close = text.find(']', open);
    needed.push_back(text.substr(open + 1, close - open - 1));
  }
  EXPECT_EQ(needed, std::vector<std::string>{"libc.so.6"}) << text;
}

}  // namespace
