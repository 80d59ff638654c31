// StackResolver on real stacks of this test process (stack_capture.c, -O2
// without frame pointers): in a function's body, on its `ret`, after its
// return (a uretprobe's view), cut short, and for a process that is gone.
#include "stacks/stack_resolver.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bpf/funclatency.h"
#include "describe_frames.h"
#include "stack_capture.h"

namespace funclatency {
namespace {

// What a slow call's record holds: the registers and the copied stack.
struct Capture {
  UserRegisters regs{};
  std::vector<uint8_t> stack;
};

// The end of this thread's stack (the highest address, exclusive).
uint64_t stack_top() {
  pthread_attr_t attributes;
  void* low = nullptr;
  size_t size = 0;
  EXPECT_EQ(pthread_getattr_np(pthread_self(), &attributes), 0);
  pthread_attr_getstack(&attributes, &low, &size);
  pthread_attr_destroy(&attributes);
  return reinterpret_cast<uint64_t>(low) + size;
}

Capture finish(const captured_stack& captured, std::vector<uint8_t> buffer) {
  Capture capture;
  static_assert(sizeof(UserRegisters) == 8 * sizeof(uint64_t));
  std::memcpy(&capture.regs, &captured, sizeof capture.regs);
  buffer.resize(captured.length);
  capture.stack = std::move(buffer);
  return capture;
}

Capture capture_in_body() {
  std::vector<uint8_t> buffer(FL_STACK_BYTES);
  captured_stack captured{};
  captured.buffer = buffer.data();
  captured.length = buffer.size();
  captured.stack_top = stack_top();
  EXPECT_EQ(capture_outer(&captured, 64), 3);
  return finish(captured, std::move(buffer));
}

Capture capture_on_ret(int (*outer)(captured_stack*) = at_ret_outer) {
  std::vector<uint8_t> buffer(FL_STACK_BYTES);
  captured_stack captured{};
  captured.buffer = buffer.data();
  captured.length = buffer.size();
  captured.stack_top = stack_top();
  EXPECT_EQ(outer(&captured), 3);
  return finish(captured, std::move(buffer));
}

StackSample sample_of(const Capture& capture, bool at_ret, size_t bytes = SIZE_MAX) {
  StackSample sample;
  sample.pid = getpid();
  sample.tid = gettid();
  sample.regs = capture.regs;
  sample.stack = std::span(capture.stack).first(std::min(bytes, capture.stack.size()));
  sample.at_ret = at_ret;
  return sample;
}

std::string self_path() {
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  return length > 0 ? std::string(path, static_cast<size_t>(length)) : std::string();
}

std::vector<std::string> symbols_of(const std::vector<StackFrame>& frames) {
  std::vector<std::string> symbols;
  for (const StackFrame& frame : frames) symbols.push_back(frame.symbol);
  return symbols;
}

// Frames named `chain` at the top, in order, in this executable, then the
// capture_* helper here, this test's body, and main (when the copy reaches it).
void expect_chain(const std::vector<StackFrame>& frames, const std::vector<std::string>& chain,
                  const std::string& test_body, bool expect_main) {
  SCOPED_TRACE(describe(frames));
  ASSERT_GE(frames.size(), chain.size() + 1);
  const std::string binary = self_path();
  for (size_t i = 0; i < chain.size(); ++i) {
    EXPECT_EQ(frames[i].symbol, chain[i]) << "frame " << i;
    EXPECT_EQ(frames[i].binary, binary) << "frame " << i;
    EXPECT_GT(frames[i].offset, 0u) << "frame " << i;
    EXPECT_LT(frames[i].offset, 4096u) << "frame " << i;
  }
  ASSERT_GE(frames.size(), chain.size() + 2);
  EXPECT_TRUE(
      frames[chain.size()].symbol.starts_with("funclatency::(anonymous namespace)::capture_"))
      << frames[chain.size()].symbol;
  EXPECT_EQ(frames[chain.size() + 1].symbol, test_body);
  EXPECT_EQ(frames[chain.size() + 1].binary, binary);
  const int main_index = index_of(frames, "main");
  if (expect_main) {
    EXPECT_GT(main_index, static_cast<int>(chain.size()) + 1);
    // gtest's runner lies between the body and main.
    const int runner = index_of(frames, "testing::internal::UnitTestImpl::RunAllTests", true);
    EXPECT_GT(runner, static_cast<int>(chain.size()) + 1);
    EXPECT_LT(runner, main_index);
  }
  // Return addresses: each after the call that names its frame.
  for (size_t i = 1; i < frames.size(); ++i) EXPECT_NE(frames[i].address, 0u);
}

// Whether the copy reached main's frame: the stack above it is small, but
// gtest's frames may not fit in 16 KB on every build.
bool copy_reaches_main(const Capture& capture) {
  return capture.stack.size() < FL_STACK_BYTES;
}

TEST(StackResolverTest, UnwindsFromAFunctionBodyWithCfiOnly) {
  const Capture capture = capture_in_body();
  // capture_middle zeroed rbp: a frame-pointer walk could not get anywhere.
  EXPECT_EQ(capture.regs.bp, 0u);
  StackResolver resolver;
  const auto frames = resolver.resolve(sample_of(capture, false));
  EXPECT_EQ(frames.at(0).address, capture.regs.ip);
  expect_chain(frames, {"capture_inner", "capture_middle", "capture_outer"},
               "funclatency::(anonymous namespace)::StackResolverTest_"
               "UnwindsFromAFunctionBodyWithCfiOnly_Test::TestBody()",
               copy_reaches_main(capture));
}

TEST(StackResolverTest, UnwindsFromAReturnInstruction) {
  const Capture capture = capture_on_ret();
  StackResolver resolver;
  const auto frames = resolver.resolve(sample_of(capture, true));
  SCOPED_TRACE(describe(frames));
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames[0].address, capture.regs.ip);
  EXPECT_EQ(frames[0].address, reinterpret_cast<uint64_t>(capture_at_ret_ret));
  // Frame 0 stands on the ret itself: named by its own address.
  EXPECT_EQ(frames[0].offset, reinterpret_cast<uint64_t>(capture_at_ret_ret) -
                                  reinterpret_cast<uint64_t>(&capture_at_ret));
  uint64_t return_address = 0;
  std::memcpy(&return_address, capture.stack.data(), sizeof return_address);
  EXPECT_EQ(frames.at(1).address, return_address);
  expect_chain(frames, {"capture_at_ret", "at_ret_inner", "at_ret_middle", "at_ret_outer"},
               "funclatency::(anonymous namespace)::StackResolverTest_"
               "UnwindsFromAReturnInstruction_Test::TestBody()",
               copy_reaches_main(capture));
}

TEST(StackResolverTest, UnwindsFromAUretprobesView) {
  // After the ret: ip is the return address in the caller, sp above it, the
  // callee-saved registers as the callee left them.
  const Capture on_ret = capture_on_ret();
  Capture after = on_ret;
  std::memcpy(&after.regs.ip, on_ret.stack.data(), sizeof after.regs.ip);
  after.regs.sp += 8;
  after.stack.erase(after.stack.begin(), after.stack.begin() + 8);
  StackResolver resolver;
  const auto frames = resolver.resolve(sample_of(after, false));
  EXPECT_EQ(frames.at(0).address, after.regs.ip);
  expect_chain(frames, {"at_ret_inner", "at_ret_middle", "at_ret_outer"},
               "funclatency::(anonymous namespace)::StackResolverTest_"
               "UnwindsFromAUretprobesView_Test::TestBody()",
               copy_reaches_main(on_ret));
}

TEST(StackResolverTest, FindsALibraryLoadedAfterItsFirstStack) {
  StackResolver resolver;
  const Capture before = capture_on_ret();
  ASSERT_GE(resolver.resolve(sample_of(before, true)).size(), 6u);
  // The same chain in a library the resolver has not seen mapped.
  void* library = dlopen(STACKS_CAPTURE_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  const auto outer = reinterpret_cast<int (*)(captured_stack*)>(dlsym(library, "at_ret_outer"));
  ASSERT_NE(outer, nullptr);
  const Capture capture = capture_on_ret(outer);
  const auto frames = resolver.resolve(sample_of(capture, true));
  SCOPED_TRACE(describe(frames));
  const std::string library_path = std::filesystem::canonical(STACKS_CAPTURE_LIB).string();
  ASSERT_GE(frames.size(), 6u);
  const std::vector<std::string> chain = {"capture_at_ret", "at_ret_inner", "at_ret_middle",
                                          "at_ret_outer"};
  for (size_t i = 0; i < chain.size(); ++i) {
    EXPECT_EQ(frames[i].symbol, chain[i]) << "frame " << i;
    EXPECT_EQ(frames[i].binary, library_path) << "frame " << i;
  }
  EXPECT_EQ(frames[4].symbol,
            "funclatency::(anonymous namespace)::capture_on_ret(int (*)(captured_stack*))");
  EXPECT_EQ(frames[4].binary, self_path());
  EXPECT_EQ(frames[5].symbol,
            "funclatency::(anonymous namespace)::StackResolverTest_"
            "FindsALibraryLoadedAfterItsFirstStack_Test::TestBody()");
  dlclose(library);
}

// A library deleted while mapped (upgraded under a running process) is read
// through /proc/PID/map_files, which takes CAP_SYS_ADMIN (or
// CAP_CHECKPOINT_RESTORE) to open.
TEST(StackResolverTest, NamesFramesInADeletedLibrary) {
  if (geteuid() != 0) GTEST_SKIP() << "opening /proc/PID/map_files needs root";
  const auto copy = std::filesystem::temp_directory_path() /
                    ("fl_stacks_capture." + std::to_string(getpid()) + ".so");
  std::filesystem::copy_file(STACKS_CAPTURE_LIB, copy,
                             std::filesystem::copy_options::overwrite_existing);
  void* library = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  std::filesystem::remove(copy);
  const auto outer = reinterpret_cast<int (*)(captured_stack*)>(dlsym(library, "at_ret_outer"));
  ASSERT_NE(outer, nullptr);
  const Capture capture = capture_on_ret(outer);
  StackResolver resolver;
  const auto frames = resolver.resolve(sample_of(capture, true));
  dlclose(library);
  SCOPED_TRACE(describe(frames));
  ASSERT_GE(frames.size(), 5u);
  EXPECT_EQ(symbols_of(frames).at(3), "at_ret_outer");
  EXPECT_EQ(frames[2].symbol, "at_ret_middle");
  EXPECT_EQ(frames[2].binary, copy.string() + " (deleted)");
  EXPECT_EQ(frames[4].binary, self_path());
}

// A return address into a pending uretprobe's trampoline ends the stack
// there: what follows it is the kernel's to know. Also reads the memory map
// and files through Options::proc_root.
TEST(StackResolverTest, StopsAtAUretprobeTrampoline) {
  const Capture capture = capture_on_ret();
  StackResolver resolver;
  const auto real = resolver.resolve(sample_of(capture, true));
  ASSERT_GE(real.size(), 5u) << describe(real);
  ASSERT_EQ(real[3].symbol, "at_ret_outer");

  // This process's map, with the trampoline's page at an address nothing uses.
  const auto proc_root =
      std::filesystem::temp_directory_path() / ("fl_stacks_test_proc." + std::to_string(getpid()));
  const auto pid_dir = proc_root / std::to_string(getpid());
  std::filesystem::create_directories(pid_dir);
  std::filesystem::create_directory_symlink("/", pid_dir / "root");
  {
    std::ifstream maps("/proc/self/maps");
    std::ofstream fake(pid_dir / "maps");
    fake << "00010000-00011000 r-xp 00000000 00:00 0                          [uprobes]\n"
         << maps.rdbuf();
  }
  // at_ret_middle returns to the trampoline instead of at_ret_outer.
  Capture hijacked = capture;
  bool replaced = false;
  for (size_t offset = 0; offset + 8 <= hijacked.stack.size() && !replaced; offset += 8) {
    uint64_t value = 0;
    std::memcpy(&value, hijacked.stack.data() + offset, 8);
    if (value == real[3].address) {
      const uint64_t trampoline = 0x10000;
      std::memcpy(hijacked.stack.data() + offset, &trampoline, 8);
      replaced = true;
    }
  }
  ASSERT_TRUE(replaced);
  StackResolver::Options options;
  options.proc_root = proc_root.string();
  StackResolver through_fake(options);
  const auto frames = through_fake.resolve(sample_of(hijacked, true));
  std::filesystem::remove_all(proc_root);
  SCOPED_TRACE(describe(frames));
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].symbol, "capture_at_ret");
  EXPECT_EQ(frames[1].symbol, "at_ret_inner");
  EXPECT_EQ(frames[2].symbol, "at_ret_middle");
  EXPECT_EQ(frames[2].binary, self_path());
  EXPECT_EQ(frames[3].address, 0x10000u);
  EXPECT_EQ(frames[3].symbol, "");
  EXPECT_EQ(frames[3].binary, "[uprobes]");
}

TEST(StackResolverTest, AShortCopyEndsTheStackEarly) {
  const Capture capture = capture_in_body();
  StackResolver resolver;
  const auto full = resolver.resolve(sample_of(capture, false));
  ASSERT_GE(full.size(), 5u) << describe(full);
  for (size_t bytes : {0, 1, 8, 24, 64, 200}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    const auto frames = resolver.resolve(sample_of(capture, false, bytes));
    SCOPED_TRACE(describe(frames));
    ASSERT_GE(frames.size(), 1u);
    EXPECT_LT(frames.size(), full.size());
    // What it found is the start of the full stack.
    for (size_t i = 0; i < frames.size(); ++i) {
      EXPECT_EQ(frames[i].address, full[i].address) << "frame " << i;
      EXPECT_EQ(frames[i].symbol, full[i].symbol) << "frame " << i;
    }
    // capture_inner's return address is at [sp]: no byte, no caller.
    if (bytes < 8) {
      EXPECT_EQ(frames.size(), 1u);
    }
  }
  // On a ret, the return address is the first 8 bytes.
  const Capture on_ret = capture_on_ret();
  EXPECT_EQ(symbols_of(resolver.resolve(sample_of(on_ret, true, 0))),
            std::vector<std::string>{"capture_at_ret"});
  EXPECT_EQ(symbols_of(resolver.resolve(sample_of(on_ret, true, 8))),
            (std::vector<std::string>{"capture_at_ret", "at_ret_inner"}));
}

TEST(StackResolverTest, MaxFramesBoundsTheStack) {
  const Capture capture = capture_on_ret();
  StackResolver::Options two;
  two.max_frames = 2;
  StackResolver resolver(two);
  EXPECT_EQ(symbols_of(resolver.resolve(sample_of(capture, true))),
            (std::vector<std::string>{"capture_at_ret", "at_ret_inner"}));
  StackResolver::Options just_one;
  just_one.max_frames = 1;
  StackResolver one(just_one);
  EXPECT_EQ(symbols_of(one.resolve(sample_of(capture, false))),
            std::vector<std::string>{"capture_at_ret"});
  StackResolver::Options no_frames;
  no_frames.max_frames = 0;
  StackResolver none(no_frames);
  EXPECT_TRUE(none.resolve(sample_of(capture, true)).empty());
}

TEST(StackResolverTest, RepeatedResolvesAgreeAndForgetDropsTheProcess) {
  const Capture capture = capture_in_body();
  StackResolver resolver;
  const auto first = resolver.resolve(sample_of(capture, false));
  const auto second = resolver.resolve(sample_of(capture, false));
  EXPECT_EQ(symbols_of(first), symbols_of(second));
  EXPECT_EQ(resolver.process_count(), 1u);
  resolver.forget_process(getpid());
  EXPECT_EQ(resolver.process_count(), 0u);
  EXPECT_EQ(symbols_of(resolver.resolve(sample_of(capture, false))), symbols_of(first));
}

TEST(StackResolverTest, AProcessThatIsGoneGivesAddressesOnly) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const Capture capture = capture_on_ret();
  StackResolver resolver;
  StackSample sample = sample_of(capture, false);
  sample.pid = sample.tid = child;
  auto frames = resolver.resolve(sample);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].address, capture.regs.ip);
  EXPECT_EQ(frames[0].symbol, "");
  EXPECT_EQ(frames[0].binary, "");
  // On a ret the copy still says who the caller was.
  sample.at_ret = true;
  frames = resolver.resolve(sample);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].address, capture.regs.ip);
  uint64_t return_address = 0;
  std::memcpy(&return_address, capture.stack.data(), sizeof return_address);
  EXPECT_EQ(frames[1].address, return_address);
  EXPECT_TRUE(frames[1].symbol.empty());
}

// A process seen while it ran (see_process: its map read, its files opened)
// is still named after it is gone: here its /proc entry is a copy that is
// removed before the stack is resolved, as a short-lived process's is.
TEST(StackResolverTest, AProcessSeenBeforeItExitedIsStillNamed) {
  const Capture capture = capture_on_ret();
  const auto proc_root =
      std::filesystem::temp_directory_path() / ("fl_stacks_test_seen." + std::to_string(getpid()));
  const auto pid_dir = proc_root / std::to_string(getpid());
  std::filesystem::create_directories(pid_dir);
  std::filesystem::create_directory_symlink("/", pid_dir / "root");
  {
    std::ifstream maps("/proc/self/maps");
    std::ofstream fake(pid_dir / "maps");
    fake << maps.rdbuf();
  }
  StackResolver::Options options;
  options.proc_root = proc_root.string();
  StackResolver seen(options);
  seen.see_process(getpid());
  EXPECT_TRUE(seen.knows_process(getpid()));
  StackResolver unseen(options);
  std::filesystem::remove_all(proc_root);  // the process is gone

  const auto frames = seen.resolve(sample_of(capture, true));
  SCOPED_TRACE(describe(frames));
  ASSERT_GE(frames.size(), 4u);
  EXPECT_EQ(symbols_of(frames)[3], "at_ret_outer");
  EXPECT_EQ(frames[3].binary, self_path());
  if (copy_reaches_main(capture)) {
    EXPECT_GE(index_of(frames, "main"), 4);
  }
  // Not seen before it went: addresses only, as before.
  const auto bare = unseen.resolve(sample_of(capture, true));
  ASSERT_GE(bare.size(), 1u);
  EXPECT_EQ(bare[0].symbol, "");
}

// forget_exited drops a process only when it was found gone by the call
// before too (what the ring held of it has been resolved in between).
TEST(StackResolverTest, ForgetExitedWaitsForASecondLook) {
  const Capture capture = capture_in_body();
  StackResolver resolver;
  resolver.see_process(getpid());
  ASSERT_EQ(resolver.process_count(), 1u);
  resolver.forget_exited([](int) { return false; });
  EXPECT_EQ(resolver.process_count(), 1u);
  resolver.forget_exited([](int) { return true; });
  EXPECT_EQ(resolver.process_count(), 1u);  // first found gone: kept
  EXPECT_GE(resolver.resolve(sample_of(capture, false)).size(), 3u);
  resolver.forget_exited([](int) { return true; });
  EXPECT_EQ(resolver.process_count(), 0u);
  // Found gone, then running again (not gone at the next look): kept.
  resolver.see_process(getpid());
  resolver.forget_exited([](int) { return true; });
  resolver.forget_exited([](int) { return false; });
  resolver.forget_exited([](int) { return true; });
  EXPECT_EQ(resolver.process_count(), 1u);
}

TEST(StackResolverTest, GarbageRegistersDoNotCrash) {
  const Capture capture = capture_in_body();
  StackResolver resolver;
  for (uint64_t ip : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}, uint64_t{capture.regs.sp}}) {
    StackSample sample = sample_of(capture, false);
    sample.regs.ip = ip;
    sample.regs.bp = capture.regs.sp + 16;  // a frame-pointer walk through the copy
    const auto frames = resolver.resolve(sample);
    EXPECT_LE(frames.size(), 64u);
    if (ip != 0) {
      ASSERT_FALSE(frames.empty());
      EXPECT_EQ(frames[0].address, ip);
      EXPECT_EQ(frames[0].symbol, "");
    }
  }
}

}  // namespace
}  // namespace funclatency
