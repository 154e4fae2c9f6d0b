/*
 * Reading a mapped ELF file (elf.h): its symbols, sections and the
 * unwind table's index of functions.  64-bit little-endian only (the
 * machines evalprof runs on); the file is mapped read-only and every
 * table is bounded by the file's size before it is read.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfread.h"

/* N bytes at OFF lie within the file. */
static int in_file(const struct evp_elf *e, uint64_t off, uint64_t n)
{
    return off <= e->size && n <= e->size - off;
}

static const Elf64_Ehdr *ehdr(const struct evp_elf *e)
{
    return (const Elf64_Ehdr *)e->m;
}

static const Elf64_Shdr *shdr(const struct evp_elf *e, unsigned i)
{
    const Elf64_Ehdr *h = ehdr(e);
    if (i >= h->e_shnum)
        return NULL;
    return (const Elf64_Shdr *)(e->m + h->e_shoff) + i;
}

int evp_elf_open(struct evp_elf *e, const char *path)
{
    memset(e, 0, sizeof *e);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return -ENOEXEC;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -errno;
    e->m = m;
    e->size = (size_t)st.st_size;
    const Elf64_Ehdr *h = ehdr(e);
    if (memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 ||
        h->e_ident[EI_CLASS] != ELFCLASS64 ||
        h->e_ident[EI_DATA] != ELFDATA2LSB ||
        (h->e_type != ET_EXEC && h->e_type != ET_DYN) ||
        h->e_phentsize != sizeof(Elf64_Phdr) ||
        !in_file(e, h->e_phoff, (uint64_t)h->e_phnum * sizeof(Elf64_Phdr)) ||
        (h->e_shnum && (h->e_shentsize != sizeof(Elf64_Shdr) ||
                        !in_file(e, h->e_shoff,
                                 (uint64_t)h->e_shnum * sizeof(Elf64_Shdr))))) {
        evp_elf_close(e);
        return -ENOEXEC;
    }
    e->dyn = h->e_type == ET_DYN;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(e->m + h->e_phoff);
    int first = 1;
    for (unsigned i = 0; i < h->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && first) {
            uint64_t align = ph[i].p_align > 1 ? ph[i].p_align : 4096;
            e->first_vaddr = (ph[i].p_vaddr - ph[i].p_offset) & ~(align - 1);
            first = 0;
        }
        if (ph[i].p_type == PT_GNU_EH_FRAME &&
            in_file(e, ph[i].p_offset, ph[i].p_filesz)) {
            e->ehf_vaddr = ph[i].p_vaddr;
            e->ehf_off = ph[i].p_offset;
            e->ehf_size = ph[i].p_filesz;
        }
    }
    return 0;
}

void evp_elf_close(struct evp_elf *e)
{
    if (e->m)
        munmap((void *)e->m, e->size);
    memset(e, 0, sizeof *e);
}

/* Look the N names up in the symbol table of section SYMTAB (its string
 * table linked); fills what is still 0. */
static int search(const struct evp_elf *e, const Elf64_Shdr *symtab,
                  const char *const *names, size_t n, uint64_t *addr,
                  uint64_t *size)
{
    const Elf64_Shdr *strs = shdr(e, symtab->sh_link);
    if (!strs || symtab->sh_entsize != sizeof(Elf64_Sym) ||
        !in_file(e, symtab->sh_offset, symtab->sh_size) ||
        !in_file(e, strs->sh_offset, strs->sh_size))
        return 0;
    const Elf64_Sym *sym = (const Elf64_Sym *)(e->m + symtab->sh_offset);
    size_t nsym = symtab->sh_size / sizeof *sym;
    const char *str = (const char *)(e->m + strs->sh_offset);
    int found = 0;
    for (size_t k = 0; k < nsym; k++) {
        if (sym[k].st_shndx == SHN_UNDEF || sym[k].st_name >= strs->sh_size ||
            sym[k].st_value == 0)
            continue;
        const char *nm = str + sym[k].st_name;
        size_t room = strs->sh_size - sym[k].st_name;
        for (size_t i = 0; i < n; i++) {
            if (addr[i])
                continue;
            size_t len = strlen(names[i]);
            if (len < room && memcmp(nm, names[i], len + 1) == 0) {
                addr[i] = sym[k].st_value;
                if (size)
                    size[i] = sym[k].st_size;
                found++;
            }
        }
    }
    return found;
}

int evp_elf_symbols(const struct evp_elf *e, const char *const *names, size_t n,
                    uint64_t *addr, uint64_t *size)
{
    memset(addr, 0, n * sizeof *addr);
    if (size)
        memset(size, 0, n * sizeof *size);
    int found = 0;
    const Elf64_Ehdr *h = ehdr(e);
    for (int pass = 0; pass < 2 && found < (int)n; pass++) {
        unsigned want = pass == 0 ? SHT_DYNSYM : SHT_SYMTAB;
        for (unsigned i = 0; i < h->e_shnum; i++) {
            const Elf64_Shdr *s = shdr(e, i);
            if (s->sh_type == want)
                found += search(e, s, names, n, addr, size);
        }
    }
    return found;
}

int evp_elf_section(const struct evp_elf *e, const char *name, uint64_t *vaddr,
                    uint64_t *size)
{
    const Elf64_Ehdr *h = ehdr(e);
    const Elf64_Shdr *names = shdr(e, h->e_shstrndx);
    if (!names || !in_file(e, names->sh_offset, names->sh_size))
        return -ENOENT;
    const char *str = (const char *)(e->m + names->sh_offset);
    size_t len = strlen(name);
    for (unsigned i = 0; i < h->e_shnum; i++) {
        const Elf64_Shdr *s = shdr(e, i);
        if (s->sh_name < names->sh_size && len < names->sh_size - s->sh_name &&
            memcmp(str + s->sh_name, name, len + 1) == 0) {
            *vaddr = s->sh_addr;
            *size = s->sh_size;
            return 0;
        }
    }
    return -ENOENT;
}

static int32_t sdata4(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

int evp_elf_function(const struct evp_elf *e, uint64_t vaddr, uint64_t *start,
                     uint64_t *next)
{
    if (!e->ehf_size || e->ehf_size < 12)
        return -ENOENT;
    const uint8_t *h = e->m + e->ehf_off;
    /* version 1; eh_frame_ptr sdata4 pcrel; fde_count udata4; table
     * datarel sdata4, as GCC and the linkers write it */
    if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
        return -ENOENT;
    uint32_t count;
    memcpy(&count, h + 8, sizeof count);
    if (count == 0 || (uint64_t)count * 8 > e->ehf_size - 12)
        return -ENOENT;
    const uint8_t *t = h + 12;
    uint64_t base = e->ehf_vaddr;
    if (base + (int64_t)sdata4(t) > vaddr)
        return -ENOENT;
    uint32_t lo = 0, hi = count;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (base + (int64_t)sdata4(t + 8 * (size_t)mid) <= vaddr)
            lo = mid;
        else
            hi = mid;
    }
    *start = base + (int64_t)sdata4(t + 8 * (size_t)lo);
    *next = lo + 1 < count ? base + (int64_t)sdata4(t + 8 * (size_t)(lo + 1))
                           : *start;
    return 0;
}
