#include "probe/uprobe_multi.h"

#include <link.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <memory>
#include <system_error>
#include <thread>

namespace funclatency {

namespace {

// The link_create part of union bpf_attr as kernels 6.6+ lay it out; the
// uapi header on Debian 12 is older.
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;
  uint32_t pid;
};
static_assert(offsetof(LinkCreateUprobeMulti, path) == 16);
static_assert(offsetof(LinkCreateUprobeMulti, cnt) == 48);
static_assert(offsetof(LinkCreateUprobeMulti, pid) == 56);

constexpr uint32_t kUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

}  // namespace

Result<int> create_uprobe_multi_link(int program_fd, const std::string& path,
                                     std::span<const uint64_t> offsets,
                                     std::span<const uint64_t> cookies, bool return_probe,
                                     int pid) {
  union bpf_attr attr;
  static_assert(sizeof(attr) >= sizeof(LinkCreateUprobeMulti));
  std::memset(&attr, 0, sizeof(attr));
  LinkCreateUprobeMulti request{};
  request.prog_fd = static_cast<uint32_t>(program_fd);
  request.attach_type = kAttachTypeUprobeMulti;
  request.path = reinterpret_cast<uintptr_t>(path.c_str());
  request.offsets = reinterpret_cast<uintptr_t>(offsets.data());
  request.cookies = reinterpret_cast<uintptr_t>(cookies.data());
  request.cnt = static_cast<uint32_t>(offsets.size());
  request.multi_flags = return_probe ? kUprobeMultiReturn : 0;
  request.pid = pid > 0 ? static_cast<uint32_t>(pid) : 0;
  std::memcpy(&attr, &request, sizeof(request));
  long fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
  if (fd < 0) return runtime_error("create a uprobe_multi link on " + path, errno);
  return static_cast<int>(fd);
}

}  // namespace funclatency

// The warm-up probe's place: called by nothing.
extern "C" __attribute__((noinline, used)) void funclatency_uprobe_warmup_site() {
  __asm__ volatile("");
}

namespace funclatency {

namespace {

struct WarmupSite {
  std::string path;  // the loaded object that holds funclatency_uprobe_warmup_site
  uint64_t offset = 0;
  bool found = false;
};

// Where funclatency_uprobe_warmup_site lies in its file: its address in the
// PT_LOAD segment that holds it, made a file offset.
int find_warmup_site(dl_phdr_info* info, size_t, void* data) {
  auto* site = static_cast<WarmupSite*>(data);
  const auto address = reinterpret_cast<uintptr_t>(&funclatency_uprobe_warmup_site);
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (segment.p_type != PT_LOAD || address < start || address >= start + segment.p_memsz) {
      continue;
    }
    site->path = info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
    site->offset = address - start + segment.p_offset;
    site->found = true;
    return 1;
  }
  return 0;
}

// A program that does nothing, for uprobe_multi links (BPF_TRACE_UPROBE_MULTI).
// A raw syscall: libbpf's loader keeps process-wide state (feature probes)
// that the main thread uses at the same time.
int load_empty_program() {
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},  // r0 = 0
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},                   // exit
  };
  static const char license[] = "GPL";
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.prog_type = BPF_PROG_TYPE_KPROBE;
  attr.insn_cnt = 2;
  attr.insns = reinterpret_cast<uintptr_t>(insns);
  attr.license = reinterpret_cast<uintptr_t>(license);
  attr.expected_attach_type = kAttachTypeUprobeMulti;
  std::memcpy(attr.prog_name, "fl_warmup", sizeof("fl_warmup"));
  return static_cast<int>(syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr)));
}

// Whether this thread still holds any capability.
bool holds_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[0].effective | data[0].permitted | data[1].effective | data[1].permitted) != 0;
}

// The warm-up: links an empty program at the site (the wait: the same path
// and lock as the real links) and says so. Closing the link waits for a
// grace period too, so it is closed here, but only once dropping privileges
// has taken this thread's capabilities: until then the thread must keep
// them (--user's setresuid runs in every thread, and glibc aborts the
// process when it fails in one), and a thread waiting in close() would hold
// up the drop. Should the run end before that, exiting closes the link.
void warm_up(std::shared_ptr<std::atomic<bool>> registered) {
  WarmupSite site;
  dl_iterate_phdr(find_warmup_site, &site);
  const int program = site.found ? load_empty_program() : -1;
  int link = -1;
  if (program >= 0) {
    const uint64_t cookie = 0;
    auto created = create_uprobe_multi_link(program, site.path, {&site.offset, 1}, {&cookie, 1},
                                            false, getpid());
    if (created) link = *created;
  }
  registered->store(true);
  registered->notify_all();
  if (link >= 0) {
    // The privilege drop's signal cuts a nap short.
    while (holds_capabilities()) {
      timespec nap{0, 50'000'000};
      nanosleep(&nap, nullptr);
    }
    ::close(link);
  }
  if (program >= 0) ::close(program);
}

std::shared_ptr<std::atomic<bool>> warmup_registered;

}  // namespace

void start_uprobe_warmup() {
  if (warmup_registered) return;
  warmup_registered = std::make_shared<std::atomic<bool>>(false);
  try {
    std::thread(warm_up, warmup_registered).detach();
  } catch (const std::system_error&) {
    warmup_registered->store(true);  // no thread: no head start, nothing to wait for
  }
}

void finish_uprobe_warmup() {
  if (warmup_registered) warmup_registered->wait(false);
}

}  // namespace funclatency
