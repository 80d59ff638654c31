// Truncated and corrupted ELF files: the reader answers with an Error (or,
// where the damage is harmless, a result) and never crashes. The fuzzer
// (tests/fuzz) explores further; these cases run in every test run.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "file_bytes.h"
#include "symbols/elf_file.h"

namespace funclatency {
namespace {

using testing::read_bytes;

// Parses and, when it succeeds, uses everything the resolver uses.
void expect_no_crash(const std::vector<uint8_t>& image, const std::string& what) {
  auto file = ElfFile::parse(image, what);
  if (!file) {
    EXPECT_EQ(file.error().kind, ErrorKind::kBadInput) << what;
    EXPECT_NE(file.error().message().find(what), std::string::npos) << file.error().message();
    return;
  }
  for (const ElfSymbol& symbol : file->symbols()) {
    if (auto offset = file->file_offset(symbol.address)) {
      (void)starts_with_endbr64(file->bytes_at(*offset, 4));
    }
    (void)file->in_executable_segment(symbol.address, symbol.size);
  }
  (void)file->crc32();
}

template <typename Field>
void patch(std::vector<uint8_t>& image, size_t offset, Field value) {
  ASSERT_LE(offset + sizeof value, image.size());
  std::memcpy(image.data() + offset, &value, sizeof value);
}

class MalformedElf : public ::testing::Test {
 protected:
  void SetUp() override {
    original_ = read_bytes(SYMFIX_PIE_CET);
    ASSERT_GT(original_.size(), sizeof(Elf64_Ehdr));
    std::memcpy(&header_, original_.data(), sizeof header_);
  }
  std::vector<uint8_t> original_;
  Elf64_Ehdr header_;
};

TEST_F(MalformedElf, IntactImageParses) {
  auto file = ElfFile::parse(original_, "intact");
  ASSERT_TRUE(file) << file.error().message();
  EXPECT_FALSE(file->symbols().empty());
}

TEST_F(MalformedElf, TruncatedImagesAreErrorsOrHarmless) {
  for (size_t length : {size_t{0}, size_t{1}, size_t{4}, size_t{16}, size_t{52}, size_t{63},
                        size_t{64}, size_t{65}, size_t{200}, original_.size() / 4,
                        original_.size() / 2, original_.size() - 64, original_.size() - 1}) {
    std::vector<uint8_t> truncated(original_.begin(), original_.begin() + length);
    expect_no_crash(truncated, "truncated-" + std::to_string(length));
  }
  auto empty = ElfFile::parse({}, "empty");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().kind, ErrorKind::kBadInput);
}

TEST_F(MalformedElf, TruncatedFileOnDiskIsBadInputNamingIt) {
  const std::string path = ::testing::TempDir() + "/truncated.elf";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(original_.data()), 40);
  auto file = ElfFile::open(path);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(file.error().message().find(path), std::string::npos);
}

TEST_F(MalformedElf, CorruptedHeaderFieldsAreErrorsOrHarmless) {
  struct Corruption {
    const char* name;
    size_t offset;
    uint64_t value;
    size_t width;
  };
  const Corruption corruptions[] = {
      {"section-headers-far-away", offsetof(Elf64_Ehdr, e_shoff), ~uint64_t{0} - 8, 8},
      {"program-headers-far-away", offsetof(Elf64_Ehdr, e_phoff), ~uint64_t{0} - 8, 8},
      {"many-sections", offsetof(Elf64_Ehdr, e_shnum), 0xffff, 2},
      {"many-program-headers", offsetof(Elf64_Ehdr, e_phnum), 0xfffe, 2},
      {"bad-section-names", offsetof(Elf64_Ehdr, e_shstrndx), 0xfff0, 2},
      {"small-section-entries", offsetof(Elf64_Ehdr, e_shentsize), 3, 2},
      {"relocatable", offsetof(Elf64_Ehdr, e_type), ET_REL, 2},
      {"core", offsetof(Elf64_Ehdr, e_type), ET_CORE, 2},
      {"class-32", EI_CLASS, ELFCLASS32, 1},
      {"class-none", EI_CLASS, ELFCLASSNONE, 1},
      {"big-endian", EI_DATA, ELFDATA2MSB, 1},
      {"bad-version", EI_VERSION, 77, 1},
  };
  for (const Corruption& corruption : corruptions) {
    std::vector<uint8_t> image = original_;
    std::memcpy(image.data() + corruption.offset, &corruption.value, corruption.width);
    expect_no_crash(image, corruption.name);
  }
  std::vector<uint8_t> relocatable = original_;
  patch<uint16_t>(relocatable, offsetof(Elf64_Ehdr, e_type), ET_REL);
  auto file = ElfFile::parse(relocatable, "relocatable");
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().message().find("not an executable or shared library"), std::string::npos);
}

TEST_F(MalformedElf, CorruptedSectionHeadersAreErrorsOrHarmless) {
  // Every field of every section header, set to values that point nowhere.
  for (uint16_t index = 0; index < header_.e_shnum; ++index) {
    const size_t section = header_.e_shoff + size_t{index} * sizeof(Elf64_Shdr);
    for (size_t field : {offsetof(Elf64_Shdr, sh_offset), offsetof(Elf64_Shdr, sh_size),
                         offsetof(Elf64_Shdr, sh_link), offsetof(Elf64_Shdr, sh_entsize),
                         offsetof(Elf64_Shdr, sh_name), offsetof(Elf64_Shdr, sh_type)}) {
      for (uint64_t value : {uint64_t{0xffffffff}, ~uint64_t{0}, uint64_t{1}}) {
        std::vector<uint8_t> image = original_;
        const size_t width = field == offsetof(Elf64_Shdr, sh_link) ||
                                     field == offsetof(Elf64_Shdr, sh_name) ||
                                     field == offsetof(Elf64_Shdr, sh_type)
                                 ? 4
                                 : 8;
        std::memcpy(image.data() + section + field, &value, width);
        expect_no_crash(image, "section-" + std::to_string(index) + "-field-" +
                                   std::to_string(field) + "-" + std::to_string(value));
      }
    }
  }
}

TEST_F(MalformedElf, RandomByteFlipsAreErrorsOrHarmless) {
  std::mt19937 random(20240611);
  std::uniform_int_distribution<size_t> position(0, original_.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 300; ++round) {
    std::vector<uint8_t> image = original_;
    for (int flips = 0; flips < 8; ++flips) {
      // Half the flips land in the headers, where damage matters most.
      const size_t where = flips % 2 == 0 ? position(random) % 4096 : position(random);
      image[where] = static_cast<uint8_t>(byte(random));
    }
    expect_no_crash(image, "flipped-" + std::to_string(round));
  }
}

TEST(FuzzSeedCorpus, EverySeedIsHandled) {
  size_t seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(FUZZ_SEED_DIR)) {
    expect_no_crash(read_bytes(entry.path()), entry.path().filename());
    ++seeds;
  }
  EXPECT_GE(seeds, 3u);
}

}  // namespace
}  // namespace funclatency
