#include "init/elf_interp.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "base/unique_fd.h"

namespace lsb::init {
namespace {

template <typename T>
T Load(const std::string& bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

template <typename Ehdr, typename Phdr>
Result<ElfInfo> ParseClass(const ReadAtFn& read, const std::string& ident) {
  if (ident.size() < sizeof(Ehdr)) return Error{"ELF header truncated"};
  auto eh = Load<Ehdr>(ident, 0);
  if (eh.e_phentsize != sizeof(Phdr)) return Error{"ELF program header size is inconsistent"};
  if (eh.e_phnum == 0 || eh.e_phnum > 512) return ElfInfo{true, ""};
  size_t table = static_cast<size_t>(eh.e_phnum) * sizeof(Phdr);
  LSB_ASSIGN_OR_RETURN(std::string phdrs, read(eh.e_phoff, table));
  if (phdrs.size() < table) return Error{"ELF program headers truncated"};
  for (size_t i = 0; i < eh.e_phnum; ++i) {
    auto ph = Load<Phdr>(phdrs, i * sizeof(Phdr));
    if (ph.p_type != PT_INTERP) continue;
    if (ph.p_filesz == 0 || ph.p_filesz > 4096) return Error{"ELF PT_INTERP has a bad size"};
    LSB_ASSIGN_OR_RETURN(std::string interp, read(ph.p_offset, ph.p_filesz));
    if (interp.size() < ph.p_filesz) return Error{"ELF PT_INTERP truncated"};
    auto nul = interp.find('\0');
    if (nul != std::string::npos) interp.resize(nul);
    if (interp.empty() || interp[0] != '/') return Error{"ELF PT_INTERP is not an absolute path"};
    return ElfInfo{true, interp};
  }
  return ElfInfo{true, ""};
}

}  // namespace

Result<ElfInfo> ParseElf(const ReadAtFn& read) {
  LSB_ASSIGN_OR_RETURN(std::string head, read(0, sizeof(Elf64_Ehdr)));
  if (head.size() < EI_NIDENT || std::memcmp(head.data(), ELFMAG, SELFMAG) != 0) return ElfInfo{};
  if (head[EI_DATA] != ELFDATA2LSB) return Error{"big-endian ELF is not supported"};
  if (head[EI_CLASS] == ELFCLASS64) return ParseClass<Elf64_Ehdr, Elf64_Phdr>(read, head);
  if (head[EI_CLASS] == ELFCLASS32) return ParseClass<Elf32_Ehdr, Elf32_Phdr>(read, head);
  return Error{"unknown ELF class"};
}

Result<ElfInfo> ReadElfInfo(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("open " + path);
  auto read = [&](uint64_t off, size_t len) -> Result<std::string> {
    std::string buf(len, '\0');
    size_t got = 0;
    while (got < len) {
      ssize_t n = ::pread(fd.get(), buf.data() + got, len - got, static_cast<off_t>(off + got));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Error::FromErrno("read " + path);
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    buf.resize(got);
    return buf;
  };
  auto r = ParseElf(read);
  if (!r.ok()) return r.error().Wrap(path);
  return r;
}

std::optional<std::string> ParseShebang(std::string_view head) {
  if (head.size() < 3 || head.substr(0, 2) != "#!") return std::nullopt;
  head.remove_prefix(2);
  auto eol = head.find('\n');
  if (eol != std::string_view::npos) head = head.substr(0, eol);
  size_t b = head.find_first_not_of(" \t");
  if (b == std::string_view::npos) return std::nullopt;
  head.remove_prefix(b);
  size_t e = head.find_first_of(" \t\r");
  std::string interp(head.substr(0, e));
  if (interp.empty() || interp[0] != '/') return std::nullopt;
  return interp;
}

}  // namespace lsb::init
