#include "init/elf_interp.h"

#include <elf.h>

#include <cstring>

#include <gtest/gtest.h>

namespace lsb::init {
namespace {

ReadAtFn FromMemory(const std::string& image) {
  return [image](uint64_t off, size_t len) -> Result<std::string> {
    if (off >= image.size()) return std::string();
    return image.substr(off, len);
  };
}

std::string MakeElf64(const std::string& interp) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_phoff = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 2;
  Elf64_Phdr load{}, in{};
  load.p_type = PT_LOAD;
  in.p_type = PT_INTERP;
  in.p_offset = sizeof eh + 2 * sizeof(Elf64_Phdr);
  in.p_filesz = interp.size() + 1;
  std::string img(reinterpret_cast<char*>(&eh), sizeof eh);
  img.append(reinterpret_cast<char*>(&load), sizeof load);
  img.append(reinterpret_cast<char*>(&in), sizeof in);
  img.append(interp);
  img.push_back('\0');
  return img;
}

TEST(ParseElf, FindsPtInterp) {
  auto r = ParseElf(FromMemory(MakeElf64("/lib64/ld-linux-x86-64.so.2")));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->is_elf);
  EXPECT_EQ(r->interp, "/lib64/ld-linux-x86-64.so.2");
}

TEST(ParseElf, NotElfIsNotAnErrorTruncatedIs) {
  auto text = ParseElf(FromMemory("#!/bin/sh\necho hi\n"));
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(text->is_elf);
  std::string img = MakeElf64("/lib/ld.so");
  EXPECT_FALSE(ParseElf(FromMemory(img.substr(0, sizeof(Elf64_Ehdr) + 10))).ok());
  std::string rel = MakeElf64("lib/ld.so");
  EXPECT_FALSE(ParseElf(FromMemory(rel)).ok());
}

TEST(ParseElf, RealPythonOnThisHost) {
  auto r = ReadElfInfo("/usr/bin/python3");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->is_elf);
  EXPECT_NE(r->interp.find("ld-linux"), std::string::npos);
}

TEST(ParseShebang, Forms) {
  EXPECT_EQ(ParseShebang("#!/bin/sh\n"), "/bin/sh");
  EXPECT_EQ(ParseShebang("#! /usr/bin/env python3 -u\nx"), "/usr/bin/env");
  EXPECT_EQ(ParseShebang("#!python\n"), std::nullopt);
  EXPECT_EQ(ParseShebang("\x7f" "ELF"), std::nullopt);
}

}  // namespace
}  // namespace lsb::init
