/* pickle_walk.c FILE - a floor for any pickle reader that uses read(): read the file in
 * 1 MiB chunks and step over each opcode with its argument, summing the integer arguments
 * so that the walk is not optimized away. No value, memo or container is built, so a
 * real reader cannot be faster by this route. Knows the opcodes pickle.dump writes for
 * a torch memory snapshot (protocol 4); exits 2 on any other. Prints the opcode count. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t op_length(const unsigned char *p, uint64_t *sum)
{
    uint32_t u32;
    uint64_t u64 = 0;
    switch (p[0]) {
    case 0x80: return 2;                      /* PROTO */
    case 0x95: return 9;                      /* FRAME */
    case 0x94: case '}': case ']': case '(': case 'u': case 'a': case 'e': case 't':
    case 0x85: case 0x86: case 0x87: case 'N': case 0x88: case 0x89: case '.':
    case 's': case 'l': case 'd': case '0': case ')':
        return 1;
    case 'h': case 'K': *sum += p[1]; return 2; /* BINGET, BININT1 */
    case 'M': *sum += (unsigned)p[1] | (unsigned)p[2] << 8; return 3;
    case 'j': case 'J': memcpy(&u32, p + 1, 4); *sum += u32; return 5;
    case 'G': return 9;                       /* BINFLOAT */
    case 0x8a: memcpy(&u64, p + 2, 8); *sum += u64; return 2 + (size_t)p[1]; /* LONG1 */
    case 0x8c: return 2 + (size_t)p[1];       /* SHORT_BINUNICODE */
    case 'X': memcpy(&u32, p + 1, 4); return 5 + (size_t)u32; /* BINUNICODE */
    case 'C': return 2 + (size_t)p[1];        /* SHORT_BINBYTES */
    case 'B': memcpy(&u32, p + 1, 4); return 5 + (size_t)u32;
    default: return 0;
    }
}

int main(int argc, char **argv)
{
    int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1;
    if (fd < 0) {
        fprintf(stderr, "usage: pickle_walk FILE\n");
        return 2;
    }
    size_t cap = 1 << 20, have = 0, pos = 0;
    unsigned char *buf = malloc(cap + 16);
    uint64_t sum = 0, ops = 0;
    for (;;) {
        memmove(buf, buf + pos, have - pos);
        have -= pos;
        pos = 0;
        ssize_t r = read(fd, buf + have, cap - have);
        if (r < 0)
            return 2;
        have += (size_t)r;
        if (r == 0) /* the end: zeros after it stop the walk at the last opcode */
            memset(buf + have, 0, 16);
        while (r == 0 ? pos < have : have - pos >= 16) { /* an opcode's fixed part fits in 16 bytes */
            size_t n = op_length(buf + pos, &sum);
            if (n == 0) {
                fprintf(stderr, "pickle_walk: opcode 0x%02x at byte %zu not known\n", buf[pos], pos);
                return 2;
            }
            if (n > have - pos)
                break;
            pos += n;
            ops++;
        }
        if (r == 0)
            break;
        if (pos == 0 && have == cap && !(buf = realloc(buf, (cap *= 2) + 16)))
            return 2;
    }
    printf("%llu opcodes (sum %llu)\n", (unsigned long long)ops, (unsigned long long)sum);
    return 0;
}
