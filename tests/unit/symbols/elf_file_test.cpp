#include "symbols/elf_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "waiting_process.h"

namespace funclatency {
namespace {

const ElfSymbol* find_symbol(const ElfFile& file, const std::string& name) {
  for (const auto& symbol : file.symbols()) {
    if (symbol.name == name) return &symbol;
  }
  return nullptr;
}

TEST(ElfFile, ReadsFunctionSymbolsWithSizes) {
  auto file = ElfFile::open(SYMFIX_PIE_CET);
  ASSERT_TRUE(file) << file.error().message();
  EXPECT_TRUE(file->has_symtab());
  for (const char* name : {"slow_op", "fast_op", "fast_op_alias", "__fast_op_impl", "local_helper",
                           "symfix_family_7", "main"}) {
    const ElfSymbol* symbol = find_symbol(*file, name);
    ASSERT_NE(symbol, nullptr) << name;
    EXPECT_GT(symbol->size, 0u) << name;
  }
  EXPECT_EQ(find_symbol(*file, "fast_op")->address, find_symbol(*file, "fast_op_alias")->address);
  EXPECT_EQ(find_symbol(*file, "zero_size_function")->size, 0u);
  // Data objects and undefined imports are not functions of this file.
  EXPECT_EQ(find_symbol(*file, "sink"), nullptr);
  EXPECT_EQ(find_symbol(*file, "printf"), nullptr);
}

TEST(ElfFile, ReadsBuildIdAndExecutableSegments) {
  auto file = ElfFile::open(SYMFIX_PIE_CET);
  ASSERT_TRUE(file);
  ASSERT_TRUE(file->build_id());
  EXPECT_EQ(file->build_id()->size(), 40u);  // a SHA-1 in hex
  EXPECT_TRUE(std::any_of(file->segments().begin(), file->segments().end(),
                          [](const LoadSegment& segment) { return segment.executable; }));
  const ElfSymbol* in_data = find_symbol(*file, "function_in_data");
  ASSERT_NE(in_data, nullptr);
  EXPECT_FALSE(file->in_executable_segment(in_data->address, in_data->size));
  const ElfSymbol* slow_op = find_symbol(*file, "slow_op");
  EXPECT_TRUE(file->in_executable_segment(slow_op->address, slow_op->size));
}

TEST(ElfFile, DetectsLeadingEndbr64OnlyInCetBuilds) {
  auto cet = ElfFile::open(SYMFIX_PIE_CET);
  auto plain = ElfFile::open(SYMFIX_NOPIE);
  ASSERT_TRUE(cet && plain);
  const auto first_bytes = [](const ElfFile& file, const char* name) {
    const ElfSymbol* symbol = find_symbol(file, name);
    return file.bytes_at(*file.file_offset(symbol->address), 4);
  };
  EXPECT_TRUE(starts_with_endbr64(first_bytes(*cet, "slow_op")));
  EXPECT_FALSE(starts_with_endbr64(first_bytes(*plain, "slow_op")));
  const uint8_t endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
  EXPECT_TRUE(starts_with_endbr64(endbr64));
  EXPECT_FALSE(starts_with_endbr64(std::span(endbr64, 3)));
}

// The ground truth for offsets: where the kernel mapped the running
// program's function, translated back to a file offset through its maps.
void expect_offset_matches_running_process(const char* binary, bool pie) {
  testing::WaitingProcess process({binary, "--wait"});
  ASSERT_TRUE(process.ready());
  auto file = ElfFile::open(binary);
  ASSERT_TRUE(file);
  const ElfSymbol* slow_op = find_symbol(*file, "slow_op");
  const uint64_t runtime = process.address_of("slow_op");
  ASSERT_NE(runtime, 0u);
  if (!pie) {
    EXPECT_EQ(runtime, slow_op->address);
  }
  const auto offset = file->file_offset(slow_op->address);
  ASSERT_TRUE(offset);
  EXPECT_EQ(*offset, testing::file_offset_in_maps(process.pid(), runtime));
}

TEST(ElfFile, FileOffsetOfPieMatchesTheRunningProcess) {
  expect_offset_matches_running_process(SYMFIX_PIE_CET, true);
}

TEST(ElfFile, FileOffsetOfNonPieMatchesTheRunningProcess) {
  expect_offset_matches_running_process(SYMFIX_NOPIE, false);
}

TEST(ElfFile, NonPieBinaryHasAbsoluteAddresses) {
  auto file = ElfFile::open(SYMFIX_NOPIE);
  ASSERT_TRUE(file);
  EXPECT_GE(find_symbol(*file, "slow_op")->address, 0x400000u);
}

TEST(ElfFile, SharedLibraryHasDynamicSymbols) {
  auto file = ElfFile::open(SYMFIX_LIB);
  ASSERT_TRUE(file) << file.error().message();
  const ElfSymbol* work = find_symbol(*file, "symfix_lib_work");
  ASSERT_NE(work, nullptr);
  const bool in_dynsym = std::any_of(
      file->symbols().begin(), file->symbols().end(),
      [](const ElfSymbol& symbol) { return symbol.dynamic && symbol.name == "symfix_lib_work"; });
  EXPECT_TRUE(in_dynsym);
}

TEST(ElfFile, MissingFileIsBadInputNamingIt) {
  auto file = ElfFile::open("/nonexistent/funclatency-test");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(file.error().message().find("/nonexistent/funclatency-test"), std::string::npos);
  EXPECT_EQ(file.error().errno_value, ENOENT);
}

TEST(ElfFile, DirectoryAndTextFileAreBadInput) {
  auto directory = ElfFile::open("/tmp");
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().kind, ErrorKind::kBadInput);

  const std::string text_path = ::testing::TempDir() + "/not-elf.txt";
  std::ofstream(text_path) << "#!/bin/sh\necho this is not ELF\n";
  auto text = ElfFile::open(text_path);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(text.error().message().find("not an ELF file"), std::string::npos)
      << text.error().message();
  EXPECT_NE(text.error().message().find(text_path), std::string::npos);
}

}  // namespace
}  // namespace funclatency
