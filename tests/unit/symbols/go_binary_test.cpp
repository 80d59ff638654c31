// Tests for the Go binary reader: synthetic buildinfo blobs and pclntabs of
// every supported format (well-formed, cut off and corrupted), and the Go
// fixture built by CMake (plain, stripped, PIE) checked against its .symtab.
#include "symbols/go_binary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "symbols/elf_file.h"

namespace funclatency {
namespace {

// ---- synthetic bytes ----

void put_le(std::vector<uint8_t>& bytes, size_t offset, uint64_t value, size_t width) {
  if (bytes.size() < offset + width) bytes.resize(offset + width);
  for (size_t i = 0; i < width; ++i) bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

void append_le(std::vector<uint8_t>& bytes, uint64_t value, size_t width) {
  put_le(bytes, bytes.size(), value, width);
}

void append_uvarint(std::vector<uint8_t>& bytes, uint64_t value) {
  for (; value >= 0x80; value >>= 7) bytes.push_back(static_cast<uint8_t>(value | 0x80));
  bytes.push_back(static_cast<uint8_t>(value));
}

uint64_t get_le(const std::vector<uint8_t>& bytes, size_t offset, size_t width) {
  uint64_t value = 0;
  for (size_t i = width; i-- > 0;) value = (value << 8) | bytes[offset + i];
  return value;
}

enum class Format { kGo116, kGo118, kGo120 };

struct SyntheticFunction {
  std::string name;
  uint64_t entry = 0;
  uint64_t code_size = 0;  // what its pc-value table covers; 0: no table
};

// A pclntab laid out as the Go linker does, with the offsets tests corrupt.
struct SyntheticTable {
  std::vector<uint8_t> bytes;
  size_t header_size = 0;
  size_t field_size = 0;
  size_t funcname_offset = 0;
  size_t pctab_offset = 0;
  size_t pcln_offset = 0;
  std::vector<size_t> records;  // table offsets of the _func records
  size_t read_end = 0;          // one past the last byte the parser must read
};

constexpr uint64_t kTextStart = 0x401000;

SyntheticTable build_pclntab(Format format, const std::vector<SyntheticFunction>& functions,
                             uint64_t text_end) {
  SyntheticTable table;
  const bool offsets = format != Format::kGo116;
  table.field_size = offsets ? 4 : 8;
  table.header_size = offsets ? 72 : 64;
  std::vector<uint8_t>& bytes = table.bytes;
  const uint32_t magic = format == Format::kGo116   ? 0xfffffffa
                         : format == Format::kGo118 ? 0xfffffff0
                                                    : 0xfffffff1;
  append_le(bytes, magic, 4);
  bytes.insert(bytes.end(), {0, 0, 1, 8});
  bytes.resize(table.header_size);

  table.funcname_offset = bytes.size();
  std::vector<uint32_t> name_offsets;
  for (const SyntheticFunction& function : functions) {
    name_offsets.push_back(static_cast<uint32_t>(bytes.size() - table.funcname_offset));
    bytes.insert(bytes.end(), function.name.begin(), function.name.end());
    bytes.push_back(0);
  }
  const size_t cu_offset = bytes.size();
  const size_t filetab_offset = bytes.size();
  table.pctab_offset = bytes.size();
  bytes.push_back(0);  // offset 0: the empty table
  std::vector<uint32_t> pcsp_offsets;
  for (const SyntheticFunction& function : functions) {
    if (function.code_size == 0) {
      pcsp_offsets.push_back(0);
      continue;
    }
    pcsp_offsets.push_back(static_cast<uint32_t>(bytes.size() - table.pctab_offset));
    // sp delta 0 for the first 3 bytes, then 8 for the rest, then the end.
    append_uvarint(bytes, 2);
    append_uvarint(bytes, 3);
    append_uvarint(bytes, 16);
    append_uvarint(bytes, function.code_size - 3);
    bytes.push_back(0);
  }
  while (bytes.size() % 8 != 0) bytes.push_back(0);

  table.pcln_offset = bytes.size();
  const size_t field = table.field_size;
  const size_t functab_size = (2 * functions.size() + 1) * field;
  const size_t record_size = field + 36;
  for (size_t i = 0; i < functions.size(); ++i) {
    const uint64_t entry = offsets ? functions[i].entry - kTextStart : functions[i].entry;
    const size_t funcoff = functab_size + i * record_size;
    append_le(bytes, entry, field);
    append_le(bytes, funcoff, field);
    table.records.push_back(table.pcln_offset + funcoff);
  }
  append_le(bytes, offsets ? text_end - kTextStart : text_end, field);
  for (size_t i = 0; i < functions.size(); ++i) {
    const size_t record = bytes.size();
    append_le(bytes, offsets ? functions[i].entry - kTextStart : functions[i].entry, field);
    append_le(bytes, name_offsets[i], 4);  // nameoff
    append_le(bytes, 16, 4);               // args
    append_le(bytes, 0, 4);                // deferreturn
    append_le(bytes, pcsp_offsets[i], 4);  // pcsp
    bytes.resize(record + record_size);    // pcfile, pcln, npcdata, cuOffset, ...
  }
  table.read_end = table.records.back() + field + 16;

  const std::vector<uint64_t> words =
      offsets ? std::vector<uint64_t>{functions.size(),   1,
                                      kTextStart,         table.funcname_offset,
                                      cu_offset,          filetab_offset,
                                      table.pctab_offset, table.pcln_offset}
              : std::vector<uint64_t>{functions.size(),      1,
                                      table.funcname_offset, cu_offset,
                                      filetab_offset,        table.pctab_offset,
                                      table.pcln_offset};
  for (size_t i = 0; i < words.size(); ++i) put_le(bytes, 8 + 8 * i, words[i], 8);
  return table;
}

const std::vector<SyntheticFunction> kFunctions = {
    {"runtime.main", 0x401000, 0x1a5},
    {"net/http.(*conn).serve", 0x4011c0, 0x30},
    {"main.main.func1", 0x401200, 0},  // no pc-value table: up to the next entry
    {"main.work", 0x401260, 0x19},
};
constexpr uint64_t kTextEnd = 0x401280;

std::string error_of(const Result<std::vector<GoFunction>>& result) {
  return result ? std::string("no error") : result.error().message();
}

class GoPclntabFormatTest : public ::testing::TestWithParam<Format> {};

TEST_P(GoPclntabFormatTest, ListsNamesAddressesAndSizes) {
  const SyntheticTable table = build_pclntab(GetParam(), kFunctions, kTextEnd);
  const auto functions = parse_go_pclntab(table.bytes, "synthetic");
  ASSERT_TRUE(functions) << functions.error().message();
  ASSERT_EQ(functions->size(), kFunctions.size());
  for (size_t i = 0; i < kFunctions.size(); ++i) {
    EXPECT_EQ((*functions)[i].name, kFunctions[i].name);
    EXPECT_EQ((*functions)[i].address, kFunctions[i].entry);
  }
  EXPECT_EQ((*functions)[0].size, 0x1a5u);
  EXPECT_EQ((*functions)[1].size, 0x30u);
  EXPECT_EQ((*functions)[2].size, 0x60u);
  EXPECT_EQ((*functions)[3].size, 0x19u);
}

TEST_P(GoPclntabFormatTest, EveryTruncationIsAnError) {
  const SyntheticTable table = build_pclntab(GetParam(), kFunctions, kTextEnd);
  for (size_t length = 0; length < table.read_end; ++length) {
    const std::span<const uint8_t> cut(table.bytes.data(), length);
    EXPECT_FALSE(parse_go_pclntab(cut, "cut")) << "length " << length;
  }
  EXPECT_TRUE(parse_go_pclntab(std::span(table.bytes.data(), table.read_end), "cut"));
}

TEST_P(GoPclntabFormatTest, CorruptHeadersAreErrors) {
  const SyntheticTable good = build_pclntab(GetParam(), kFunctions, kTextEnd);
  auto parse_with = [&](size_t offset, uint64_t value, size_t width) {
    SyntheticTable table = good;
    put_le(table.bytes, offset, value, width);
    return parse_go_pclntab(table.bytes, "corrupt.bin");
  };
  for (size_t byte = 0; byte < 4; ++byte) {
    SyntheticTable table = good;
    table.bytes[byte] ^= 0x5a;
    EXPECT_FALSE(parse_go_pclntab(table.bytes, "corrupt.bin")) << "magic byte " << byte;
  }
  const auto old_format = parse_with(0, 0xfffffffb, 4);
  EXPECT_NE(error_of(old_format).find("Go 1.2-1.15"), std::string::npos) << error_of(old_format);
  const auto big_endian = parse_with(0, 0xf0ffffff, 4);
  EXPECT_NE(error_of(big_endian).find("big-endian"), std::string::npos) << error_of(big_endian);
  EXPECT_FALSE(parse_with(4, 1, 1)) << "padding";
  EXPECT_FALSE(parse_with(6, 3, 1)) << "pc quantum";
  const auto pointers = parse_with(7, 4, 1);
  EXPECT_NE(error_of(pointers).find("64-bit"), std::string::npos) << error_of(pointers);

  // nfunc: zero, one too many, absurd.
  for (const uint64_t count : {uint64_t{0}, uint64_t{kFunctions.size() + 1}, uint64_t{1} << 62,
                               ~uint64_t{0}, ~uint64_t{0} / 2}) {
    const auto result = parse_with(8, count, 8);
    EXPECT_FALSE(result) << "nfunc " << count;
    if (!result) {
      EXPECT_EQ(result.error().kind, ErrorKind::kBadInput);
      EXPECT_NE(result.error().message().find("corrupt.bin"), std::string::npos);
    }
  }
  // Each table offset past the end, inside the header, or absurd.
  const size_t first_offset_word = good.header_size == 72 ? 3 : 2;
  for (const size_t word : {first_offset_word, first_offset_word + 3, first_offset_word + 4}) {
    for (const uint64_t value : {uint64_t{good.bytes.size()}, uint64_t{8}, ~uint64_t{0}}) {
      EXPECT_FALSE(parse_with(8 + 8 * word, value, 8)) << "word " << word << " = " << value;
    }
  }
}

TEST_P(GoPclntabFormatTest, CorruptFunctionsAreErrors) {
  const SyntheticTable good = build_pclntab(GetParam(), kFunctions, kTextEnd);
  const size_t field = good.field_size;
  auto parse_with = [&](size_t offset, uint64_t value, size_t width) {
    SyntheticTable table = good;
    put_le(table.bytes, offset, value, width);
    return parse_go_pclntab(table.bytes, "corrupt.bin");
  };
  const size_t record = good.records[1];
  // Name offsets: past the end, negative, absurd, onto the last byte (which
  // is not a NUL once set), onto an empty name.
  for (const int64_t name_offset :
       {int64_t(good.bytes.size()), int64_t(good.bytes.size() - good.funcname_offset), int64_t{-1},
        int64_t{INT32_MIN}, int64_t{INT32_MAX}}) {
    EXPECT_FALSE(parse_with(record + field, static_cast<uint32_t>(name_offset), 4))
        << "name offset " << name_offset;
  }
  {
    SyntheticTable table = good;
    table.bytes.back() = 'x';
    put_le(table.bytes, record + field, table.bytes.size() - 1 - table.funcname_offset, 4);
    EXPECT_FALSE(parse_go_pclntab(table.bytes, "corrupt.bin")) << "unterminated name";
    put_le(table.bytes, record + field, table.pctab_offset - table.funcname_offset, 4);
    EXPECT_FALSE(parse_go_pclntab(table.bytes, "corrupt.bin")) << "empty name";
  }
  // Record offsets out of range.
  const size_t funcoff_field = good.pcln_offset + 3 * field;
  for (const uint64_t funcoff : {uint64_t{good.bytes.size()}, uint64_t{good.bytes.size() - 4},
                                 ~uint64_t{0} >> (64 - 8 * field)}) {
    EXPECT_FALSE(parse_with(funcoff_field, funcoff, field)) << "funcoff " << funcoff;
  }
  // Entries out of order, a record that disagrees with the table.
  EXPECT_FALSE(parse_with(good.pcln_offset + 2 * field, 0, field)) << "out of order";
  EXPECT_FALSE(parse_with(record, get_le(good.bytes, record, field) + 0x10, field));
  EXPECT_FALSE(parse_with(good.pcln_offset + 2 * kFunctions.size() * field, 0, field))
      << "end before the last function";
  // pc-value tables: too long for the function, outside the table, cut off.
  EXPECT_FALSE(parse_with(record + field + 12, good.bytes.size(), 4)) << "pcsp past the end";
  EXPECT_FALSE(parse_with(record + field + 12, ~uint32_t{0}, 4)) << "pcsp absurd";
  {
    SyntheticTable table = good;
    const size_t pcsp = table.pctab_offset + get_le(table.bytes, record + field + 12, 4);
    table.bytes[pcsp + 3] = 0x7f;  // the second pc delta: past the next entry
    EXPECT_FALSE(parse_go_pclntab(table.bytes, "corrupt.bin")) << "pc table too long";
    std::fill(table.bytes.begin() + static_cast<std::ptrdiff_t>(pcsp),
              table.bytes.begin() + static_cast<std::ptrdiff_t>(table.pcln_offset), 0x81);
    EXPECT_FALSE(parse_go_pclntab(table.bytes, "corrupt.bin")) << "pc table unterminated";
  }
}

TEST_P(GoPclntabFormatTest, RandomCorruptionNeverCrashes) {
  const SyntheticTable good = build_pclntab(GetParam(), kFunctions, kTextEnd);
  std::mt19937 random(1234);
  constexpr int kRounds = 20000;
  int refused = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<uint8_t> bytes = good.bytes;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i) {
      bytes[random() % bytes.size()] = static_cast<uint8_t>(random());
    }
    bytes.resize(bytes.size() - random() % 16);
    auto functions = parse_go_pclntab(bytes, "random");
    if (!functions) {
      // One clear message naming the input, as the user would see it.
      ASSERT_EQ(functions.error().kind, ErrorKind::kBadInput) << functions.error().message();
      ASSERT_TRUE(functions.error().message().starts_with("random")) << functions.error().message();
      refused++;
      continue;
    }
    // Taken: what the parser promises of a table it accepts.
    uint64_t previous = 0;
    for (const GoFunction& function : *functions) {
      ASSERT_FALSE(function.name.empty()) << "round " << round;
      ASSERT_GE(function.address, previous) << "round " << round;
      ASSERT_GE(function.address + function.size, function.address) << "round " << round;
      previous = function.address;
    }
  }
  // Both ways were taken: most flips break the table, some miss what it reads.
  EXPECT_GT(refused, 0);
  EXPECT_LT(refused, kRounds);
}

std::string format_name(const ::testing::TestParamInfo<Format>& info) {
  static constexpr const char* kNames[] = {"Go116", "Go118", "Go120"};
  return kNames[static_cast<size_t>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(GoFormats, GoPclntabFormatTest,
                         ::testing::Values(Format::kGo116, Format::kGo118, Format::kGo120),
                         format_name);

// ---- buildinfo ----

std::vector<uint8_t> buildinfo_header(uint8_t pointer_size, uint8_t flags) {
  std::vector<uint8_t> blob(32, 0);
  std::memcpy(blob.data(), "\xff Go buildinf:", 14);
  blob[14] = pointer_size;
  blob[15] = flags;
  return blob;
}

std::vector<uint8_t> inline_buildinfo(const std::string& version) {
  std::vector<uint8_t> blob = buildinfo_header(8, 2);
  append_uvarint(blob, version.size());
  blob.insert(blob.end(), version.begin(), version.end());
  const std::string modinfo = "path\tcommand-line-arguments\n";
  append_uvarint(blob, modinfo.size());
  blob.insert(blob.end(), modinfo.begin(), modinfo.end());
  return blob;
}

const GoAddressReader kNoMemory = [](uint64_t, size_t) { return std::span<const uint8_t>(); };

// A flat memory of the program for the Go < 1.18 pointer format.
struct FakeMemory {
  uint64_t base = 0x500000;
  std::vector<uint8_t> bytes;
  GoAddressReader reader() const {
    return [this](uint64_t address, size_t count) -> std::span<const uint8_t> {
      if (address < base || address - base >= bytes.size()) return {};
      const size_t start = address - base;
      return std::span(bytes).subspan(start, std::min(count, bytes.size() - start));
    };
  }
};

TEST(GoBuildinfoTest, ReadsInlineVersion) {
  const auto version = parse_go_buildinfo(inline_buildinfo("go1.21.3"), kNoMemory, "x");
  ASSERT_TRUE(version) << version.error().message();
  EXPECT_EQ(version->text, "go1.21.3");
  EXPECT_EQ(version->major, 1);
  EXPECT_EQ(version->minor, 21);
}

TEST(GoBuildinfoTest, ReadsVersionThroughPointers) {
  FakeMemory memory;
  // A Go string header {data, len} at base+0x10, the bytes at base+0x40.
  const std::string text = "go1.16.15";
  put_le(memory.bytes, 0x10, memory.base + 0x40, 8);
  put_le(memory.bytes, 0x18, text.size(), 8);
  memory.bytes.resize(0x40);
  memory.bytes.insert(memory.bytes.end(), text.begin(), text.end());
  std::vector<uint8_t> blob = buildinfo_header(8, 0);
  put_le(blob, 16, memory.base + 0x10, 8);
  put_le(blob, 24, memory.base + 0x10, 8);
  const auto version = parse_go_buildinfo(blob, memory.reader(), "x");
  ASSERT_TRUE(version) << version.error().message();
  EXPECT_EQ(version->text, "go1.16.15");
  EXPECT_EQ(version->minor, 16);

  // The string's bytes cut off, its header unmapped, an absurd length,
  // big-endian, an odd pointer size.
  FakeMemory cut = memory;
  cut.bytes.resize(0x44);
  EXPECT_FALSE(parse_go_buildinfo(blob, cut.reader(), "x"));
  std::vector<uint8_t> unmapped = blob;
  put_le(unmapped, 16, 0x1000, 8);
  EXPECT_FALSE(parse_go_buildinfo(unmapped, memory.reader(), "x"));
  FakeMemory absurd = memory;
  put_le(absurd.bytes, 0x18, ~uint64_t{0}, 8);
  EXPECT_FALSE(parse_go_buildinfo(blob, absurd.reader(), "x"));
  std::vector<uint8_t> big_endian = blob;
  big_endian[15] = 1;
  EXPECT_FALSE(parse_go_buildinfo(big_endian, memory.reader(), "x"));
  std::vector<uint8_t> odd = blob;
  odd[14] = 3;
  EXPECT_FALSE(parse_go_buildinfo(odd, memory.reader(), "x"));
}

TEST(GoBuildinfoTest, MalformedBlobsAreErrors) {
  const std::vector<uint8_t> good = inline_buildinfo("go1.22.1");
  // Every cut that loses part of the header or of the version string.
  for (size_t length = 0; length < 32 + 1 + 8; ++length) {
    const auto result = parse_go_buildinfo(std::span(good.data(), length), kNoMemory, "cut.bin");
    EXPECT_FALSE(result) << "length " << length;
    if (!result) {
      EXPECT_NE(result.error().message().find("cut.bin"), std::string::npos);
    }
  }
  for (size_t byte = 0; byte < 14; ++byte) {
    std::vector<uint8_t> blob = good;
    blob[byte] ^= 0x20;
    EXPECT_FALSE(parse_go_buildinfo(blob, kNoMemory, "x")) << "magic byte " << byte;
  }
  std::vector<uint8_t> huge = buildinfo_header(8, 2);
  append_uvarint(huge, ~uint64_t{0});
  EXPECT_FALSE(parse_go_buildinfo(huge, kNoMemory, "x"));
  std::vector<uint8_t> endless = buildinfo_header(8, 2);
  endless.insert(endless.end(), 12, 0xff);
  EXPECT_FALSE(parse_go_buildinfo(endless, kNoMemory, "x"));
  EXPECT_FALSE(parse_go_buildinfo(inline_buildinfo(""), kNoMemory, "x"));
}

TEST(GoVersionTest, ParsesReleaseAndDevelopmentVersions) {
  const auto check = [](std::string_view text, int major, int minor) {
    const GoVersion version = parse_go_version(text);
    EXPECT_EQ(version.text, text);
    EXPECT_EQ(version.major, major) << text;
    EXPECT_EQ(version.minor, minor) << text;
  };
  check("go1.19.8", 1, 19);
  check("go1.21rc2", 1, 21);
  check("go1.22.0 X:nocoverageredesign", 1, 22);
  check("go1.17", 1, 17);
  check("devel go1.23-1a2b3c4 Tue Jan 1 00:00:00 2024 +0000", 1, 23);
  check("devel +b7a85e0003 Fri Jun 1 00:00:00 2021 +0000", 0, 0);
  check("go", 0, 0);
  check("go1", 0, 0);
  check("go1.", 0, 0);
  check("gox.y", 0, 0);
  check("", 0, 0);
}

TEST(GoVersionTest, GoidOffsetPerVersion) {
  EXPECT_EQ(go_goid_offset(1, 16), std::nullopt);
  EXPECT_EQ(go_goid_offset(1, 12), std::nullopt);
  EXPECT_EQ(go_goid_offset(0, 0), std::nullopt);
  for (int minor = 17; minor <= 22; ++minor) EXPECT_EQ(go_goid_offset(1, minor), 152u) << minor;
  EXPECT_EQ(go_goid_offset(1, 23), 160u);
  EXPECT_EQ(go_goid_offset(1, 24), 160u);
  EXPECT_EQ(go_goid_offset(1, 25), 152u);
  EXPECT_EQ(go_goid_offset(2, 0), std::nullopt);
}

// ---- real binaries ----

TEST(GoBinaryTest, CBinaryIsNotGo) {
  const auto file = ElfFile::open("/proc/self/exe");
  ASSERT_TRUE(file) << file.error().message();
  const auto go = read_go_binary(*file);
  ASSERT_TRUE(go) << go.error().message();
  EXPECT_FALSE(go->has_value());
}

#ifdef GOFIX_DIR
#define SKIP_WITHOUT_GO() (void)0
const std::string kGoFixtureDir = GOFIX_DIR;
#else
#define SKIP_WITHOUT_GO() GTEST_SKIP() << "Go is not installed: the Go fixture was not built"
const std::string kGoFixtureDir;
#define GOFIX_GO_VERSION ""
#endif

std::string fixture(const std::string& variant) {
  return kGoFixtureDir + "/gofix_" + variant;
}

// The fixture's functions that funclatency users name.
const std::vector<std::string> kFixtureFunctions = {"main.main", "main.work", "main.(*counter).add",
                                                    "main.apply", "main.main.func1"};

// Each pclntab function is a .symtab function at the same address with the
// same size, and the same name, or that name with ".abi0": Go's ABI
// wrappers carry the name of the function they wrap in the pclntab, so a
// name can be listed twice. Generic shapes differ ("[...]" for "[5]").
void expect_matches_symtab(const GoBinary& go, const ElfFile& with_symtab) {
  ASSERT_TRUE(with_symtab.has_symtab());
  std::map<uint64_t, std::vector<const ElfSymbol*>> by_address;
  for (const ElfSymbol& symbol : with_symtab.symbols()) {
    by_address[symbol.address].push_back(&symbol);
  }
  size_t same_name = 0;
  for (const GoFunction& function : go.functions) {
    const auto found = by_address.find(function.address);
    ASSERT_NE(found, by_address.end()) << function.name;
    const auto symbol = std::ranges::find_if(found->second, [&](const ElfSymbol* candidate) {
      return candidate->name == function.name || candidate->name == function.name + ".abi0";
    });
    if (symbol == found->second.end()) {
      EXPECT_TRUE(function.name.contains("[...]"))
          << function.name << " is " << found->second.front()->name;
      continue;
    }
    ++same_name;
    EXPECT_EQ(function.size, (*symbol)->size) << function.name;
  }
  EXPECT_GT(same_name, go.functions.size() * 95 / 100);
  for (const std::string& name : kFixtureFunctions) {
    EXPECT_EQ(std::ranges::count(go.functions, name, &GoFunction::name), 1) << name;
    const auto function = std::ranges::find(go.functions, name, &GoFunction::name);
    ASSERT_NE(function, go.functions.end()) << name;
    const auto symbol = std::ranges::find(with_symtab.symbols(), name, &ElfSymbol::name);
    ASSERT_NE(symbol, with_symtab.symbols().end()) << name;
    EXPECT_EQ(function->address, symbol->address) << name;
    EXPECT_EQ(function->size, symbol->size) << name;
    EXPECT_GT(function->size, 0u) << name;
  }
}

TEST(GoBinaryTest, StrippedFixtureMatchesUnstrippedSymbols) {
  SKIP_WITHOUT_GO();
  const auto stripped = ElfFile::open(fixture("stripped"));
  const auto plain = ElfFile::open(fixture("plain"));
  ASSERT_TRUE(stripped) << stripped.error().message();
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_FALSE(stripped->has_symtab());

  const auto go = read_go_binary(*stripped);
  ASSERT_TRUE(go) << go.error().message();
  ASSERT_TRUE(go->has_value());
  const GoBinary& binary = **go;
  EXPECT_EQ(binary.version.text, GOFIX_GO_VERSION);  // `go env GOVERSION`
  EXPECT_EQ(binary.version.major, 1);
  EXPECT_GE(binary.version.minor, 17);
  EXPECT_EQ(binary.goid_offset, go_goid_offset(1, binary.version.minor));
  if (binary.version.text.starts_with("go1.19")) {
    EXPECT_EQ(binary.goid_offset, 152u);
  }
  EXPECT_TRUE(std::ranges::is_sorted(binary.functions, {}, &GoFunction::address));
  expect_matches_symtab(binary, *plain);

  // The unstripped build reads the same.
  const auto go_plain = read_go_binary(*plain);
  ASSERT_TRUE(go_plain && go_plain->has_value());
  EXPECT_EQ((*go_plain)->version.text, binary.version.text);
  EXPECT_EQ((*go_plain)->functions.size(), binary.functions.size());
}

TEST(GoBinaryTest, PieFixturesMatchTheirSymbols) {
  SKIP_WITHOUT_GO();
  // Go's linker names the table .data.rel.ro.gopclntab; the C linker merges
  // it into .data.rel.ro, where it is found by its header.
  for (const std::string variant : {"pie", "extpie"}) {
    SCOPED_TRACE(variant);
    const auto file = ElfFile::open(fixture(variant));
    ASSERT_TRUE(file) << file.error().message();
    EXPECT_FALSE(file->section(".gopclntab").has_value());
    const auto go = read_go_binary(*file);
    ASSERT_TRUE(go) << go.error().message();
    ASSERT_TRUE(go->has_value());
    expect_matches_symtab(**go, *file);
  }
}

// The stripped fixture's .gopclntab bytes, corrupted in place.
class GoFixtureTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GO();
    auto file = ElfFile::open(fixture("stripped"));
    ASSERT_TRUE(file) << file.error().message();
    const std::optional<ElfSection> section = file->section(".gopclntab");
    ASSERT_TRUE(section);
    ASSERT_EQ(section->bytes.size(), section->size);
    table_.assign(section->bytes.begin(), section->bytes.end());
    const std::optional<ElfSection> buildinfo = file->section(".go.buildinfo");
    ASSERT_TRUE(buildinfo);
    buildinfo_.assign(buildinfo->bytes.begin(), buildinfo->bytes.end());
    text_ = file->section(".text");
    ASSERT_TRUE(text_);
  }
  std::vector<uint8_t> table_;
  std::vector<uint8_t> buildinfo_;
  std::optional<ElfSection> text_;
};

TEST_F(GoFixtureTableTest, HeaderNamesTheTextSection) {
  ASSERT_GE(table_.size(), 72u);
  const uint32_t magic = static_cast<uint32_t>(get_le(table_, 0, 4));
  EXPECT_TRUE(magic == 0xfffffff0 || magic == 0xfffffff1) << std::hex << magic;
  EXPECT_EQ(get_le(table_, 24, 8), text_->address);  // textStart
  const auto functions = parse_go_pclntab(table_, "fixture");
  ASSERT_TRUE(functions) << functions.error().message();
  EXPECT_EQ(functions->front().address, text_->address);
}

TEST_F(GoFixtureTableTest, CutOrCorruptTablesAreErrors) {
  for (size_t length = 0; length <= 72; ++length) {
    EXPECT_FALSE(parse_go_pclntab(std::span(table_.data(), length), "cut")) << length;
  }
  auto parse_with = [&](size_t offset, uint64_t value, size_t width) {
    std::vector<uint8_t> bytes = table_;
    put_le(bytes, offset, value, width);
    return parse_go_pclntab(bytes, "corrupt");
  };
  EXPECT_FALSE(parse_with(0, get_le(table_, 0, 4) ^ 0x00ff0000, 4)) << "magic";
  EXPECT_FALSE(parse_with(8, get_le(table_, 8, 8) * 16, 8)) << "nfunc too big";
  EXPECT_FALSE(parse_with(8, ~uint64_t{0}, 8)) << "nfunc absurd";
  // Function 0's name offset (its record: pclnOffset + funcoff 0, then the
  // 4-byte entry offset).
  const uint64_t pcln = get_le(table_, 64, 8);
  const uint64_t record = pcln + get_le(table_, pcln + 4, 4);
  EXPECT_FALSE(parse_with(record + 4, table_.size(), 4)) << "name offset past the end";
  EXPECT_FALSE(parse_with(record + 4, 0x80000000u, 4)) << "negative name offset";
}

TEST_F(GoFixtureTableTest, CutAndCorruptedCopiesNeverCrash) {
  std::mt19937 random(42);
  for (int round = 0; round < 200; ++round) {
    const size_t length = random() % (table_.size() + 1);
    (void)parse_go_pclntab(std::span(table_.data(), length), "cut");
  }
  for (int round = 0; round < 200; ++round) {
    std::vector<uint8_t> bytes = table_;
    // Corrupt the header and functab, where a wrong byte moves every read.
    const size_t area = std::min<size_t>(bytes.size(), 4096);
    for (int i = 0; i < 3; ++i) bytes[random() % area] = static_cast<uint8_t>(random());
    (void)parse_go_pclntab(bytes, "corrupt");
  }
  for (size_t length = 0; length < buildinfo_.size(); ++length) {
    const auto version = parse_go_buildinfo(std::span(buildinfo_.data(), length), kNoMemory, "x");
    if (length < 32 + 1 + 6) {
      EXPECT_FALSE(version) << length;  // "go1.19" cut
    }
  }
}

TEST(GoBinaryTest, SectionLookup) {
  SKIP_WITHOUT_GO();
  const auto file = ElfFile::open(fixture("stripped"));
  ASSERT_TRUE(file) << file.error().message();
  const std::optional<ElfSection> text = file->section(".text");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->name, ".text");
  EXPECT_NE(text->address, 0u);
  EXPECT_EQ(text->bytes.size(), text->size);
  EXPECT_EQ(file->file_offset(text->address), text->file_offset);
  EXPECT_EQ(file->bytes_at_address(text->address, 16).data(), text->bytes.data());
  EXPECT_FALSE(file->section(".no.such.section").has_value());
  const std::optional<ElfSection> bss = file->section(".bss");
  ASSERT_TRUE(bss);
  EXPECT_TRUE(bss->bytes.empty());
  EXPECT_GT(bss->size, 0u);
}

}  // namespace
}  // namespace funclatency
