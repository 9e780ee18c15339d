// Note [Tuning records] (the file of recorded choices) and Note [Convolution tuning]'s
// rounds (time_rounds: the candidates over 1.25x the best drop out after two rounds).
#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "phi_kernels/cpu/conv_onednn_common.h"
#include "phi_kernels/funcs/tuning_records.h"

namespace oar::phi {
namespace {

double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void spin(double seconds) {
  const double end = thread_seconds() + seconds;
  while (thread_seconds() < end) {
  }
}

// Times candidates that spin for `ms` each (at one thread the rounds' clock is the thread's
// CPU time, which a preempting neighbour does not advance); returns the runs of each.
std::vector<int> runs_of(const std::vector<double>& ms, std::vector<double>* times = nullptr) {
  const int prev = omp_get_max_threads();
  omp_set_num_threads(1);
  std::vector<int> runs(ms.size(), 0);
  std::vector<double> t = onednn_detail::time_rounds(ms.size(), [&](size_t i) {
    ++runs[i];
    spin(ms[i] * 1e-3);
  });
  omp_set_num_threads(prev);
  if (times) *times = t;
  return runs;
}

TEST(TimeRounds, SlowCandidatesDropOutAfterTwoRounds) {
  std::vector<double> t;
  const std::vector<int> runs = runs_of({1.0, 2.0, 1.1}, &t);
  EXPECT_EQ(runs[1], 3);  // the warm-up and two timed rounds
  EXPECT_GE(runs[0], 6);  // the warm-up and at least five rounds
  EXPECT_GE(runs[2], 6);
  EXPECT_EQ(runs[0], runs[2]);
  EXPECT_LT(t[0], t[1]);
  EXPECT_NEAR(t[0], 1e-3, 0.3e-3);
  EXPECT_NEAR(t[1], 2e-3, 0.6e-3);
}

TEST(TimeRounds, OneLeftEndsIt) {
  const std::vector<int> runs = runs_of({1.0, 3.0});
  EXPECT_EQ(runs[0], 3);
  EXPECT_EQ(runs[1], 3);
}

TEST(TimeRounds, CloseCandidatesRunUntil30Ms) {
  const std::vector<int> runs = runs_of({1.0, 1.05});
  // at least 5 rounds, and more until ~30 ms are spent: 2.05 ms a round, so 15
  EXPECT_GE(runs[0], 14);
  EXPECT_LE(runs[0], 17);
  EXPECT_EQ(runs[0], runs[1]);
}

class TuningRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/oar_tuning_records_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    old_ = FLAGS_oar_tuning_cache;
  }
  void TearDown() override {
    FLAGS_oar_tuning_cache = old_;
    std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  // A fresh directory for each case: a table is read once per process and path.
  std::string use(const std::string& sub) {
    FLAGS_oar_tuning_cache = dir_ + "/" + sub;
    return tuning_records_path("t", "ctx");
  }
  static std::string read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  static void write(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
  }
  std::string dir_, old_;
};

TEST_F(TuningRecords, RecordThenRecall) {
  const std::string path = use("a");
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(path.rfind(dir_ + "/a/t-", 0), 0u) << path;
  const std::string key("k\0\n\t\xff", 5);  // tune keys are raw bytes
  EXPECT_EQ(recall_choice("t", "ctx", key), "");
  record_choice("t", "ctx", key, "winograd");
  record_choice("t", "ctx", "other", "im2col");
  record_choice("t", "ctx", key, "onednn-blocked");  // later wins
  EXPECT_EQ(recall_choice("t", "ctx", key), "onednn-blocked");
  EXPECT_EQ(recall_choice("t", "ctx", "other"), "im2col");
  EXPECT_EQ(recall_choice("t", "another context", key), "");  // another file
  EXPECT_NE(tuning_records_path("t", "another context"), path);
  const std::string text = read(path);
  EXPECT_EQ(text.rfind("# oar tuning records v1: build ", 0), 0u) << text;
  EXPECT_NE(text.find("; ctx\n"), std::string::npos) << text;
  EXPECT_NE(text.find("6b000a09ff\twinograd\n"), std::string::npos) << text;
  EXPECT_NE(text.find("6b000a09ff\tonednn-blocked\n"), std::string::npos) << text;
  // a process reading the file afresh (here: the same file under another spelling of its
  // directory) sees the last record of each key
  FLAGS_oar_tuning_cache = dir_ + "/./a";
  EXPECT_EQ(recall_choice("t", "ctx", key), "onednn-blocked");
  EXPECT_EQ(recall_choice("t", "ctx", "other"), "im2col");
}

TEST_F(TuningRecords, CorruptLinesAreSkipped) {
  const std::string path = use("b");
  record_choice("t", "ctx", "x", "first");  // makes the file and its header
  const std::string header = read(path).substr(0, read(path).find('\n') + 1);
  write(path, header + "zz\tbad-hex\n" + "616\todd-length\n" + "\tno-key\n" + "61\t\n" + "no tab at all\n" +
                  std::string("62\tnul\0inside\n", 14) + "63\tgood\n" + "64\tcut-short");
  FLAGS_oar_tuning_cache = dir_ + "/./b";
  EXPECT_EQ(recall_choice("t", "ctx", "c"), "good");
  EXPECT_EQ(recall_choice("t", "ctx", "a"), "");
  EXPECT_EQ(recall_choice("t", "ctx", "b"), "");
  EXPECT_EQ(recall_choice("t", "ctx", "d"), "");  // the last line has no newline
  EXPECT_EQ(recall_choice("t", "ctx", "x"), "");  // no longer in the file
}

TEST_F(TuningRecords, AFileNotOursIsReplaced) {
  const std::string path = use("c");
  ASSERT_EQ(system(("mkdir -p '" + dir_ + "/c'").c_str()), 0);
  write(path, std::string("\x7f"
                          "ELF\0\0garbage\n63\tgood\n",
                          22));
  EXPECT_EQ(recall_choice("t", "ctx", "c"), "");  // no header: nothing read
  record_choice("t", "ctx", "c", "mine");
  const std::string text = read(path);
  EXPECT_EQ(text.rfind("# oar tuning records v1: ", 0), 0u);
  EXPECT_EQ(text.substr(text.find('\n') + 1), "63\tmine\n");
  FLAGS_oar_tuning_cache = dir_ + "/./c";
  EXPECT_EQ(recall_choice("t", "ctx", "c"), "mine");
}

TEST_F(TuningRecords, OffRecordsNothing) {
  for (const char* off : {"0", "off", "false"}) {
    FLAGS_oar_tuning_cache = off;
    EXPECT_EQ(tuning_records_path("t", "ctx"), "");
    record_choice("t", "ctx", "k", "v");
    EXPECT_EQ(recall_choice("t", "ctx", "k"), "");
  }
}

// A C++ program that never read FLAGS_* from its environment (a predictor linked into an
// application): the flag left empty, the variable decides; then XDG_CACHE_HOME, then HOME.
TEST_F(TuningRecords, TheEnvironmentDecidesWhereTheFlagIsEmpty) {
  auto keep = [](const char* name) {
    const char* v = std::getenv(name);
    return std::make_pair(std::string(name), v ? std::optional<std::string>(v) : std::nullopt);
  };
  const auto saved = {keep("FLAGS_oar_tuning_cache"), keep("XDG_CACHE_HOME"), keep("HOME")};
  FLAGS_oar_tuning_cache = "";
  setenv("FLAGS_oar_tuning_cache", (dir_ + "/env").c_str(), 1);
  EXPECT_EQ(tuning_records_path("t", "ctx").rfind(dir_ + "/env/t-", 0), 0u);
  setenv("FLAGS_oar_tuning_cache", "off", 1);
  EXPECT_EQ(tuning_records_path("t", "ctx"), "");
  unsetenv("FLAGS_oar_tuning_cache");
  setenv("XDG_CACHE_HOME", (dir_ + "/xdg").c_str(), 1);
  EXPECT_EQ(tuning_records_path("t", "ctx").rfind(dir_ + "/xdg/oar/tuning/t-", 0), 0u);
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", (dir_ + "/home").c_str(), 1);
  EXPECT_EQ(tuning_records_path("t", "ctx").rfind(dir_ + "/home/.cache/oar/tuning/t-", 0), 0u);
  unsetenv("HOME");
  EXPECT_EQ(tuning_records_path("t", "ctx"), "");  // nowhere to keep them
  for (const auto& [name, value] : saved) {
    if (value)
      setenv(name.c_str(), value->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
}

TEST_F(TuningRecords, UnwritableDirectoryRecordsNothing) {
  write(dir_ + "/file", "x");
  FLAGS_oar_tuning_cache = dir_ + "/file/sub";  // under a regular file: mkdir fails
  record_choice("t", "ctx", "k", "v");
  EXPECT_EQ(recall_choice("t", "ctx", "k"), "v");  // kept for this process only
  FLAGS_oar_tuning_cache = dir_ + "/file/./sub";
  EXPECT_EQ(recall_choice("t", "ctx", "k"), "");
}

}  // namespace
}  // namespace oar::phi
