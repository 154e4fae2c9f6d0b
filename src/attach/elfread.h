/*
 * The ELF files a process has mapped, read from disk (attach-internal):
 * symbols (the dynamic table, and the full one where the file was not
 * stripped), a section's place, the functions' extents from the unwind
 * table's sorted index (.eh_frame_hdr), for a stripped interpreter whose
 * eval loop has no name.  Nothing here trusts the file: every offset
 * and count is checked against its size.
 */
#ifndef EVP_ATTACH_ELFREAD_H
#define EVP_ATTACH_ELFREAD_H

#include <stddef.h>
#include <stdint.h>

struct evp_elf {
    const uint8_t *m; /* the file, mapped */
    size_t size;
    int dyn;              /* ET_DYN: loaded at a bias */
    uint64_t first_vaddr; /* the first PT_LOAD's p_vaddr, page-aligned */
    uint64_t ehf_vaddr, ehf_off, ehf_size; /* PT_GNU_EH_FRAME, 0: none */
};

/* Map PATH: 0, or -errno (-ENOEXEC: not a 64-bit ELF file of this
 * machine). */
int evp_elf_open(struct evp_elf *e, const char *path);
void evp_elf_close(struct evp_elf *e);

/* Look up each of the N names (the dynamic symbol table first, then the
 * full one): ADDR[i] gets its value (0: not found) and SIZE[i], when
 * SIZE is not NULL, its size.  Returns how many were found. */
int evp_elf_symbols(const struct evp_elf *e, const char *const *names, size_t n,
                    uint64_t *addr, uint64_t *size);

/* The section NAME: 0 with *VADDR and *SIZE, or -ENOENT. */
int evp_elf_section(const struct evp_elf *e, const char *name, uint64_t *vaddr,
                    uint64_t *size);

/* The function holding VADDR per .eh_frame_hdr: 0 with its start and the
 * next function's start, -ENOENT. */
int evp_elf_function(const struct evp_elf *e, uint64_t vaddr, uint64_t *start,
                     uint64_t *next);

/* The address the file's vaddr 0 is at in a process that maps its first
 * page (file offset 0) at LO. */
static inline uint64_t evp_elf_bias(const struct evp_elf *e, uint64_t lo)
{
    return e->dyn ? lo - e->first_vaddr : 0;
}

#endif
