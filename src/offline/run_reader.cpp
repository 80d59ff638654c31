// The NDJSON reader (see run_reader.h). Every check names the file and line;
// unknown fields and unknown record types are skipped, so output of a newer
// funclatency still reads.
#include "offline/run_reader.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/json_record.h"
#include "offline/bucket_math.h"

namespace funclatency::offline {
namespace {

namespace field = json_record;

using nlohmann::json;

constexpr std::string_view kRecordHint = "expected the JSON lines of `funclatency --json`";

// Where a record came from, for messages.
struct Place {
  std::string_view name;
  size_t line;

  std::unexpected<Error> fail(const std::string& what) const {
    return bad_input(fmt::format("{}:{}: {}", name, line, what), std::string(kRecordHint));
  }
};

Result<uint64_t> unsigned_field(const json& object, const char* key, const Place& at,
                                std::string_view within = {}) {
  auto it = object.find(key);
  if (it == object.end()) {
    return at.fail(fmt::format("no \"{}\" field{}", key, within));
  }
  if (!it->is_number_unsigned()) {
    return at.fail(fmt::format("\"{}\"{} is not a non-negative integer", key, within));
  }
  return it->get<uint64_t>();
}

// An optional unsigned field: absent is fine, anything else must be one.
Result<std::optional<uint64_t>> optional_unsigned(const json& object, const char* key,
                                                  const Place& at, std::string_view within = {}) {
  if (!object.contains(key)) return std::optional<uint64_t>();
  auto value = unsigned_field(object, key, at, within);
  if (!value) return std::unexpected(value.error());
  return std::optional<uint64_t>(*value);
}

Result<std::string> string_field(const json& object, const char* key, const Place& at,
                                 bool required) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (required) return at.fail(fmt::format("no \"{}\" field", key));
    return std::string();
  }
  if (!it->is_string()) return at.fail(fmt::format("\"{}\" is not a string", key));
  return it->get<std::string>();
}

Result<std::vector<Bucket>> read_buckets(const json& object, const Place& at,
                                         std::string_view within) {
  auto it = object.find(field::kLog2Buckets);
  if (it == object.end()) return at.fail(fmt::format("no \"log2_buckets\" field{}", within));
  if (!it->is_array()) return at.fail(fmt::format("\"log2_buckets\"{} is not an array", within));
  std::vector<Bucket> buckets;
  for (const json& row : *it) {
    const bool triple = row.is_array() && row.size() == 3 && row[0].is_number_unsigned() &&
                        row[1].is_number_unsigned() && row[2].is_number_unsigned();
    if (!triple) {
      return at.fail(
          fmt::format("a \"log2_buckets\" entry{} is not [low_ns, high_ns, count]", within));
    }
    Bucket bucket{row[0].get<uint64_t>(), row[1].get<uint64_t>(), row[2].get<uint64_t>()};
    if (bucket.high_ns < bucket.low_ns || bucket.high_ns == UINT64_MAX) {
      return at.fail(fmt::format("a \"log2_buckets\" entry{} ends before it starts", within));
    }
    if (!buckets.empty() && bucket.low_ns <= buckets.back().high_ns) {
      return at.fail(fmt::format("\"log2_buckets\"{} are not in ascending order", within));
    }
    buckets.push_back(bucket);
  }
  return buckets;
}

// The histogram fields of `object` (a record, or its oncpu/runnable/blocked).
Result<RecordedHistogram> read_histogram(const json& object, const Place& at,
                                         std::string_view within) {
  RecordedHistogram h;
  auto count = unsigned_field(object, field::kCount, at, within);
  if (!count) return std::unexpected(count.error());
  h.count = *count;
  for (auto [key, into] : {std::pair{field::kSumNs, &h.sum_ns}, std::pair{field::kMinNs, &h.min_ns},
                           std::pair{field::kMaxNs, &h.max_ns}}) {
    auto value = optional_unsigned(object, key, at, within);
    if (!value) return std::unexpected(value.error());
    *into = value->value_or(0);
  }
  for (auto [key, into] : {std::pair{field::kP50Ns, &h.p50_ns}, std::pair{field::kP95Ns, &h.p95_ns},
                           std::pair{field::kP99Ns, &h.p99_ns}}) {
    auto value = optional_unsigned(object, key, at, within);
    if (!value) return std::unexpected(value.error());
    *into = *value;
  }
  auto buckets = read_buckets(object, at, within);
  if (!buckets) return std::unexpected(buckets.error());
  h.buckets = std::move(*buckets);
  uint64_t in_rows = 0;
  for (const Bucket& b : h.buckets) {
    if (__builtin_add_overflow(in_rows, b.count, &in_rows)) {
      return at.fail(fmt::format("\"log2_buckets\"{} counts overflow", within));
    }
  }
  if (in_rows != h.count) {
    return at.fail(fmt::format("\"count\"{} is {} but its log2_buckets hold {} calls", within,
                               h.count, in_rows));
  }
  if (h.count > 0 && h.min_ns > h.max_ns) {
    return at.fail(fmt::format("\"min_ns\"{} is above \"max_ns\"", within));
  }
  return h;
}

Result<RecordedLost> read_lost(const json& object, const Place& at) {
  RecordedLost lost;
  for (auto [key, into] :
       {std::pair{field::kLost, &lost.total}, std::pair{field::kLostUnreturned, &lost.unreturned},
        std::pair{field::kLostDepth, &lost.depth}, std::pair{field::kLostRingbuf, &lost.ringbuf}}) {
    auto value = optional_unsigned(object, key, at);
    if (!value) return std::unexpected(value.error());
    *into = value->value_or(0);
  }
  return lost;
}

// A stack frame as the console prints it: symbol+0xOFFSET (binary).
std::string frame_text(const json& frame) {
  auto text_of = [&frame](const char* key) {
    auto it = frame.find(key);
    return it != frame.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string text = text_of(field::kSymbol);
  auto offset = frame.find(field::kOffset);
  if (!text.empty() && offset != frame.end() && offset->is_number_unsigned()) {
    text += fmt::format("+0x{:x}", offset->get<uint64_t>());
  }
  if (auto address = frame.find(field::kAddress); text.empty() && address != frame.end()) {
    text = address->is_number_unsigned() ? fmt::format("0x{:x}", address->get<uint64_t>())
                                         : text_of(field::kAddress);
  }
  if (std::string binary = text_of(field::kBinary); !binary.empty()) text += " (" + binary + ")";
  return text;
}

std::string scalar_text(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains(field::kAddress)) return frame_text(value);
  if (value.is_array()) {
    std::string text;
    for (const json& item : value) {
      if (!text.empty()) text += " <- ";
      text += scalar_text(item);
    }
    return text;
  }
  return value.dump();
}

// Exemplars are whatever objects the run wrote; a duration is looked for
// under the names a version may use, the rest is shown as key=value.
std::vector<Exemplar> read_exemplars(const json& object) {
  std::vector<Exemplar> exemplars;
  auto it = object.find(field::kExemplars);
  if (it == object.end() || !it->is_array()) return exemplars;
  for (const json& item : *it) {
    if (!item.is_object()) continue;
    Exemplar exemplar;
    for (const auto& [key, value] : item.items()) {
      const bool duration =
          key == field::kDurationNs || key == "latency_ns" || key == "value_ns" || key == "wall_ns";
      if (duration && value.is_number_unsigned() && !exemplar.duration_ns) {
        exemplar.duration_ns = value.get<uint64_t>();
        continue;
      }
      if (!exemplar.description.empty()) exemplar.description += "  ";
      exemplar.description += key + "=" + scalar_text(value);
    }
    exemplars.push_back(std::move(exemplar));
  }
  return exemplars;
}

std::optional<double> parse_rfc3339(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  double seconds = static_cast<double>(timegm(&tm));
  const char* rest = text.c_str() + consumed;
  if (*rest == '.') {
    double scale = 0.1;
    for (++rest; *rest >= '0' && *rest <= '9'; ++rest, scale /= 10)
      seconds += (*rest - '0') * scale;
  }
  return seconds;
}

struct ParsedLine {
  RecordedSeriesKey key;
  Record record;
};

// One non-empty line; nullopt for a record type this version does not know.
Result<std::optional<ParsedLine>> parse_line(std::string_view line, const Place& at) {
  json object;
  try {
    object = json::parse(line);
  } catch (const json::parse_error& e) {
    const bool truncated = e.byte >= line.size();
    return at.fail(truncated ? "truncated JSON record" : fmt::format("not JSON ({})", e.what()));
  } catch (const json::exception& e) {
    // A number too large for a double ("9E99999") is out_of_range, not parse_error.
    return at.fail(fmt::format("not JSON ({})", e.what()));
  }
  if (!object.is_object()) return at.fail("not a JSON object");
  auto type = string_field(object, field::kType, at, true);
  if (!type) return std::unexpected(type.error());
  ParsedLine parsed;
  Record& record = parsed.record;
  record.line = at.line;
  if (*type == field::kInterval) {
    record.type = RecordType::kInterval;
  } else if (*type == field::kTotal) {
    record.type = RecordType::kTotal;
  } else {
    return std::optional<ParsedLine>();
  }
  for (auto [key, into, required] : {std::tuple{field::kSymbol, &parsed.key.symbol, true},
                                     std::tuple{field::kBinary, &parsed.key.binary, true},
                                     std::tuple{field::kComm, &parsed.key.comm, false},
                                     std::tuple{field::kRetval, &parsed.key.retval, false},
                                     std::tuple{field::kArg, &parsed.key.arg, false},
                                     std::tuple{field::kTime, &record.time, false},
                                     std::tuple{field::kMode, &record.mode, false}}) {
    auto value = string_field(object, key, at, required);
    if (!value) return std::unexpected(value.error());
    *into = std::move(*value);
  }
  if (auto cgroup = object.find(field::kCgroup); cgroup != object.end()) {
    parsed.key.cgroup = scalar_text(*cgroup);
  }
  if (auto pid = object.find(field::kPid); pid != object.end()) {
    if (!pid->is_number_integer()) return at.fail("\"pid\" is not an integer");
    parsed.key.pid = pid->get<int64_t>();
  }
  if (auto index = object.find(field::kArgIndex); index != object.end()) {
    if (!index->is_number_integer()) return at.fail("\"arg_index\" is not an integer");
    parsed.key.arg_index = index->get<int64_t>();
  }
  record.epoch_s = parse_rfc3339(record.time);
  auto wall = read_histogram(object, at, "");
  if (!wall) return std::unexpected(wall.error());
  record.wall = std::move(*wall);
  auto lost = read_lost(object, at);
  if (!lost) return std::unexpected(lost.error());
  record.lost = *lost;
  for (auto [key, into] :
       {std::pair{field::kOncpu, &record.oncpu}, std::pair{field::kRunnable, &record.runnable},
        std::pair{field::kBlocked, &record.blocked}, std::pair{field::kSelf, &record.self}}) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) continue;
    if (!it->is_object()) return at.fail(fmt::format("\"{}\" is not an object", key));
    auto part = read_histogram(*it, at, fmt::format(" of \"{}\"", key));
    if (!part) return std::unexpected(part.error());
    *into = std::move(*part);
  }
  record.exemplars = read_exemplars(object);
  return std::optional<ParsedLine>(std::move(parsed));
}

// Checks one histogram's rows against the run's unit (taken from the first
// record that has rows).
Result<void> check_unit(const RecordedHistogram& h, uint64_t& unit_ns, const Place& at) {
  auto unit = unit_of_buckets(h.buckets);
  if (!unit) return at.fail("\"log2_buckets\" are not log2 rows of ns, usec or msec");
  if (*unit == 0) return {};
  if (unit_ns == 0) unit_ns = *unit;
  if (*unit != unit_ns) {
    return at.fail(fmt::format("rows in {} where earlier records were in {}", unit_name(*unit),
                               unit_name(unit_ns)));
  }
  return {};
}

}  // namespace

std::string RecordedSeriesKey::label() const {
  std::string text = fmt::format("{} ({}", symbol, basename_of(binary));
  if (pid) text += fmt::format(", pid {}", *pid);
  if (!comm.empty()) text += ", " + comm;
  if (!cgroup.empty()) text += ", cgroup " + cgroup;
  if (!retval.empty()) text += ", retval " + retval;
  if (!arg.empty()) text += fmt::format(", arg{} {}", arg_index.value_or(0), arg);
  return text + ")";
}

std::string_view unit_name(uint64_t unit_ns) {
  return unit_ns >= 1000000 ? "ms" : unit_ns >= 1000 ? "us" : "ns";
}

std::string_view basename_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

Result<Run> parse_run(std::string_view text, std::string_view name) {
  Run run;
  run.name = std::string(name);
  size_t line_number = 0;
  size_t records = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const Place at{name, line_number};
    auto parsed = parse_line(line, at);
    if (!parsed) return std::unexpected(parsed.error());
    if (!*parsed) continue;
    Record& record = (*parsed)->record;
    for (const RecordedHistogram* h :
         {&record.wall, record.oncpu ? &*record.oncpu : nullptr,
          record.runnable ? &*record.runnable : nullptr,
          record.blocked ? &*record.blocked : nullptr, record.self ? &*record.self : nullptr}) {
      if (!h) continue;
      auto unit = check_unit(*h, run.unit_ns, at);
      if (!unit) return std::unexpected(unit.error());
    }
    ++records;
    RecordedSeriesKey& key = (*parsed)->key;
    auto series = std::find_if(run.series.begin(), run.series.end(),
                               [&](const Series& s) { return s.key == key; });
    if (series == run.series.end()) {
      run.series.push_back(Series{std::move(key), {}, {}});
      series = run.series.end() - 1;
    }
    if (record.type == RecordType::kTotal) {
      if (series->total) {
        return at.fail(fmt::format("a second \"total\" record for {} (the first is on line {})",
                                   series->key.label(), series->total->line));
      }
      series->total = std::move(record);
    } else {
      if (series->total) {
        return at.fail(
            fmt::format("an \"interval\" record for {} after its \"total\"", series->key.label()));
      }
      series->intervals.push_back(std::move(record));
      ++run.interval_records;
    }
  }
  if (records == 0) {
    return bad_input(fmt::format("{}: no interval or total records", name),
                     "write one with `funclatency --json -i SECS TARGET > run.ndjson`");
  }
  if (run.unit_ns == 0) run.unit_ns = 1000;  // no calls at all: the default unit
  return run;
}

Result<Run> read_run_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return bad_input(fmt::format("open {}", path), "", err);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return runtime_error(fmt::format("read {}", path), errno);
  return parse_run(text.str(), path);
}

}  // namespace funclatency::offline
