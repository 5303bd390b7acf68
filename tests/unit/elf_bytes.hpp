// The smallest ELF images that tell static from dynamic: a 64-bit header
// and program headers (PT_LOAD, plus PT_INTERP for a dynamic one).
#pragma once

#include <elf.h>

#include <cstring>
#include <string>

namespace memgate::test {

inline std::string tiny_elf(bool dynamic, bool big_endian = false) {
  Elf64_Ehdr h{};
  std::memcpy(h.e_ident, ELFMAG, SELFMAG);
  h.e_ident[EI_CLASS] = ELFCLASS64;
  h.e_ident[EI_DATA] = big_endian ? ELFDATA2MSB : ELFDATA2LSB;
  h.e_ident[EI_VERSION] = EV_CURRENT;
  h.e_type = ET_EXEC;
  h.e_machine = EM_X86_64;
  h.e_phoff = sizeof h;
  h.e_phentsize = sizeof(Elf64_Phdr);
  h.e_phnum = dynamic ? 2 : 1;
  Elf64_Phdr load{}, interp{};
  load.p_type = PT_LOAD;
  interp.p_type = PT_INTERP;
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  out.append(reinterpret_cast<const char*>(&load), sizeof load);
  if (dynamic) out.append(reinterpret_cast<const char*>(&interp), sizeof interp);
  if (big_endian) {
    // Byte-swap the fields the reader uses: phoff, phentsize, phnum, p_type.
    auto swap = [&out](std::size_t off, std::size_t n) {
      for (std::size_t i = 0; i < n / 2; ++i) std::swap(out[off + i], out[off + n - 1 - i]);
    };
    swap(offsetof(Elf64_Ehdr, e_phoff), 8);
    swap(offsetof(Elf64_Ehdr, e_phentsize), 2);
    swap(offsetof(Elf64_Ehdr, e_phnum), 2);
    for (int i = 0; i < (dynamic ? 2 : 1); ++i) swap(sizeof h + i * sizeof(Elf64_Phdr), 4);
  }
  return out;
}

}  // namespace memgate::test
