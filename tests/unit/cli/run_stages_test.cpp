#include "cli/run_stages.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bpf/funclatency.h"

namespace funclatency {
namespace {

Config config_for(std::vector<std::string> targets) {
  Config config;
  config.targets = std::move(targets);
  return config;
}

AttachedSite attached(uint32_t fn_id, std::string symbol) {
  AttachedSite site;
  site.fn_id = fn_id;
  site.symbol = std::move(symbol);
  site.binary = "/opt/app";
  return site;
}

ProbeSite site_at(uint64_t offset) {
  ProbeSite site;
  site.binary = "/opt/app";
  site.file_offset = offset;
  return site;
}

TEST(ParseTargets, ANameWithoutBinaryNeedsAPid) {
  Config config = config_for({"./app:slow_op", ":handle"});
  auto refused = parse_targets(config);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().exit_code(), 2);
  EXPECT_NE(refused.error().message().find(":handle"), std::string::npos);
  config.pid = 42;
  auto specs = parse_targets(config);
  ASSERT_TRUE(specs);
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0].binary, "./app");
  EXPECT_EQ((*specs)[1].function, "handle");
}

TEST(LoadOptions, SizedForTheSitesAndRoomForLibrariesAwaited) {
  Config config = config_for({"./app:op*"});
  config.pid = 7;
  config.unit_ns = 1000000;
  config.mode = ModeChoice::kKernel;
  config.late_functions = 10;
  PlannedTargets targets;
  targets.sites = {site_at(0x10), site_at(0x20)};
  targets.plans.resize(2);
  targets.plans[0].fn_flags = 1;
  targets.plans[1].entry_emulated = true;
  targets.plans[1].use_ret_instructions = true;

  LoadOptions load = load_options(config, targets, std::nullopt);
  EXPECT_EQ(load.num_functions, 2u);
  EXPECT_EQ(load.unit_ns, 1000000u);
  EXPECT_EQ(load.filter_tgid, 7u);
  EXPECT_EQ(load.initial_mode, static_cast<uint32_t>(FL_MODE_KERNEL));
  EXPECT_FALSE(load.return_program);
  EXPECT_FALSE(load.exit_program);
  EXPECT_EQ(load.function_flags, (std::vector<uint32_t>{1, 0}));
  EXPECT_EQ(load.function_subtract_ns, (std::vector<uint64_t>{0, 0}));

  targets.waiting.push_back(TargetSpec{"plugin", "handle"});
  Calibration calibration;
  calibration.median_ns[0][0] = 900;
  calibration.median_ns[1][1] = 300;
  load = load_options(config, targets, calibration);
  EXPECT_EQ(load.num_functions, 12u);
  EXPECT_TRUE(load.return_program);
  EXPECT_TRUE(load.exit_program);
  EXPECT_EQ(load.function_subtract_ns, (std::vector<uint64_t>{900, 300}));
}

TEST(LoadOptions, KernelSlotsFollowTheFunctionsKnownWhenMoreMayCome) {
  Config config = config_for({"./app:op*"});
  config.pid = 7;
  PlannedTargets targets;
  targets.sites = {site_at(0x10), site_at(0x20)};
  targets.plans.resize(2);
  EXPECT_EQ(load_options(config, targets, std::nullopt).kernel_slots, 64u);
  // Functions attached later: those known and 16 more, at most 64.
  targets.waiting.push_back(TargetSpec{"plugin", "handle"});
  EXPECT_EQ(load_options(config, targets, std::nullopt).kernel_slots, 18u);
  targets.sites.assign(60, site_at(0x10));
  targets.plans.resize(60);
  EXPECT_EQ(load_options(config, targets, std::nullopt).kernel_slots, 64u);
  // --kernel-slots given wins; --mode events needs one.
  config.kernel_slots = 100;
  EXPECT_EQ(load_options(config, targets, std::nullopt).kernel_slots, 100u);
  config.mode = ModeChoice::kEvents;
  EXPECT_EQ(load_options(config, targets, std::nullopt).kernel_slots, 1u);
  // Go code: the goroutines' room.
  config.go_goroutines = 300;
  EXPECT_EQ(load_options(config, targets, std::nullopt).go_goroutines, 300u);
}

TEST(WatchOptions, LaterFunctionsStartWhereTheSitesEnd) {
  Config config = config_for({"plugin:handle"});
  config.pid = 9;
  config.exit_probes = ExitProbeChoice::kRetInstructions;
  LoadOptions load;
  load.initial_mode = FL_MODE_KERNEL;
  Calibration calibration;
  calibration.median_ns[1][0] = 250;
  WatchOptions options =
      watch_options(config, load, AttachMethod::kPerfEvent, 3, std::optional(calibration));
  EXPECT_EQ(options.pid, 9);
  EXPECT_EQ(options.attach.resolve.pid, 9);
  EXPECT_EQ(options.attach.exit_probes, ExitProbeChoice::kRetInstructions);
  EXPECT_EQ(options.attach.initial_mode, static_cast<uint32_t>(FL_MODE_KERNEL));
  EXPECT_EQ(options.attach.method, AttachMethod::kPerfEvent);
  EXPECT_EQ(options.first_free_fn_id, 3u);
  ProbePlan emulated;
  emulated.entry_emulated = true;
  EXPECT_EQ(options.attach.subtract_ns(emulated), 250u);
  EXPECT_EQ(
      watch_options(config, load, AttachMethod::kPerfEvent, 3, {}).attach.subtract_ns(emulated),
      0u);
}

TEST(SiteKeys, OnePerFileOffset) {
  std::vector<ProbeSite> sites = {site_at(0x10), site_at(0x20), site_at(0x10)};
  auto keys = site_keys(sites);
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_TRUE(keys.count({"/opt/app", 0x20}));
}

TEST(SessionOptions, AutoModeSwitchesBackAtAQuarterOfTheThreshold) {
  Config config = config_for({"./app:op"});
  config.auto_threshold = 8000;
  config.interval = std::chrono::milliseconds(2000);
  config.mode = ModeChoice::kEvents;
  SessionOptions options = session_options(config);
  EXPECT_EQ(options.interval, std::chrono::milliseconds(2000));
  EXPECT_EQ(options.mode, ModeChoice::kEvents);
  EXPECT_EQ(options.policy.to_kernel_calls_per_sec, 8000);
  EXPECT_EQ(options.policy.to_events_calls_per_sec, 2000);
  EXPECT_FALSE(options.attach_late);
}

TEST(ReportGroups, OneGroupPerTracedFunctionDroppedOnesReportNowhere) {
  Config config = config_for({"./app:op*"});
  config.pid = 5;
  std::vector<AttachedSite> traced = {attached(0, "op_a"), attached(2, "op_c")};
  ReportGroups result = report_groups(config, traced, 4);
  ASSERT_EQ(result.groups.size(), 2u);
  EXPECT_EQ(result.groups[1].symbol, "op_c");
  EXPECT_EQ(result.groups[1].pid, 5);
  EXPECT_EQ(result.group_of_function, (std::vector<uint32_t>{0, kNoGroup, 1, kNoGroup}));
}

TEST(ReportGroups, MergeMakesOneGroupNamedForThePattern) {
  Config config = config_for({"./app:op*"});
  config.merge = true;
  std::vector<AttachedSite> traced = {attached(0, "op_a"), attached(1, "op_b")};
  ReportGroups result = report_groups(config, traced, 2);
  ASSERT_EQ(result.groups.size(), 1u);
  EXPECT_EQ(result.groups[0].symbol, "2 functions matching ./app:op*");
  EXPECT_EQ(result.group_of_function, (std::vector<uint32_t>{0, 0}));
  // One function merged keeps its own name.
  traced.pop_back();
  EXPECT_EQ(report_groups(config, traced, 2).groups[0].symbol, "op_a");
}

TEST(Lines, AttachedSiteSaysWhereTheEntryWent) {
  AttachedSite site = attached(0, "slow_op");
  site.offset = 0x1139;
  site.exit_description = "return probe";
  EXPECT_EQ(attached_line(site), "slow_op: entry probe at /opt/app:0x1139; exit: return probe");
  site.entry_skip = 4;
  site.entry_description = "after endbr64, +4";
  EXPECT_EQ(attached_line(site),
            "slow_op: entry probe at /opt/app:0x1139 (after endbr64, +4); exit: return probe");
  EXPECT_EQ(links_line(3, AttachMethod::kPerfEvent), "3 links (perf-event uprobes: one per probe)");
}

TEST(Lines, DroppedNamesFiveAtMost) {
  EXPECT_EQ(dropped_line({}), "");
  std::vector<DroppedFunction> dropped = {{0, "f0", "vex"}};
  EXPECT_EQ(dropped_line(dropped), "skipping 1 function that cannot be probed (-v says why): f0");
  for (uint32_t i = 1; i < 7; i++) dropped.push_back({i, "f" + std::to_string(i), "vex"});
  EXPECT_EQ(dropped_line(dropped),
            "skipping 7 functions that cannot be probed (-v says why): f0, f1, f2, f3, f4 "
            "and 2 more");
}

TEST(Lines, BannerNamesTheTargetsTheModeAndWhatIsAwaited) {
  Config config = config_for({"./app:op*"});
  config.mode = ModeChoice::kEvents;
  std::vector<AttachedSite> one = {attached(0, "op_a")};
  EXPECT_EQ(start_banner(config, one, {}),
            "Tracing 1 function for \"op_a\" (mode events: one ring buffer record per call)... "
            "Hit Ctrl-C to end.\n");
  config.pid = 12;
  config.mode = ModeChoice::kKernel;
  std::vector<AttachedSite> two = {attached(0, "op_a"), attached(1, "op_b")};
  std::vector<TargetSpec> pending = {{"plugin", "handle"}, {"other", "run*"}};
  EXPECT_EQ(start_banner(config, two, pending),
            "Tracing 2 functions for \"op_a\" and 1 more; waiting for process 12 to load the "
            "library of plugin:handle, other:run* (mode kernel: histograms aggregated in the "
            "kernel)... Hit Ctrl-C to end.\n");
  config.mode = ModeChoice::kAuto;
  std::string waiting = start_banner(config, {}, pending);
  EXPECT_TRUE(
      waiting.starts_with("Waiting for process 12 to load the library of plugin:handle, "
                          "other:run* (mode auto: "))
      << waiting;
  EXPECT_EQ(never_loaded_line(12, pending),
            "process 12 never loaded the library of plugin:handle, other:run*");
}

TEST(Lines, GracePeriodLineSaysWhichTheNodeHasAndNothingForOtherContent) {
  // The content as sysfs gives it, with its newline.
  const std::string normal = grace_period_line("0\n");
  EXPECT_TRUE(normal.starts_with("the node's RCU grace periods are normal")) << normal;
  EXPECT_NE(normal.find("--follow-hold"), std::string::npos) << normal;
  EXPECT_NE(normal.find("rcu_expedited=1"), std::string::npos) << normal;
  const std::string expedited = grace_period_line("1\n");
  EXPECT_TRUE(expedited.starts_with("the node's RCU grace periods are expedited")) << expedited;
  EXPECT_EQ(grace_period_line(""), "");  // the file unread
  EXPECT_EQ(grace_period_line("2\n"), "");
}

TEST(Listing, ShowsThePlannersEntryAndWhyAFunctionIsNotProbed) {
  std::vector<ListedFunction> listed(3);
  listed[0].symbol = "slow_op";
  listed[0].binary = "/opt/app";
  listed[0].address = 0x1139;
  listed[0].size = 42;
  listed[1].symbol = "empty";
  listed[1].binary = "/usr/lib/libx.so";
  listed[1].refused_reason = "has size 0";
  listed[2].symbol = "go_op";
  listed[2].binary = "/opt/app";
  std::vector<std::optional<ProbePlan>> plans(3);
  plans[0].emplace().entry_skip = 4;
  plans[2].emplace().refused = "no ret instruction";
  std::string text = format_listing(listed, plans);
  std::vector<std::string> lines;
  for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
       start = end + 1) {
    lines.push_back(text.substr(start, end - start));
  }
  ASSERT_EQ(lines.size(), 4u) << text;
  EXPECT_TRUE(lines[0].starts_with("FUNCTION ")) << text;
  EXPECT_TRUE(lines[0].ends_with("BINARY            ENTRY")) << text;
  EXPECT_EQ(lines[1],
            fmt::format("{:<40} 0x0000000000001139       42  /opt/app          +4", "slow_op"));
  EXPECT_TRUE(lines[2].ends_with("/usr/lib/libx.so  (not probed: has size 0)")) << text;
  EXPECT_TRUE(lines[3].ends_with("/opt/app          (not probed: no ret instruction)")) << text;
  // ENTRY starts in one column on every line.
  EXPECT_EQ(lines[0].find("ENTRY"), lines[1].find("+4"));
}

}  // namespace
}  // namespace funclatency
