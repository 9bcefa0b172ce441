/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/util.c: sharc-llama's messages, files, clock, random mixing and half-precision
 * conversions (the trainer keeps to sharc's public API, so it carries its own few lines of
 * these).
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int llama_log_rank = -1;

void llama_err(const char *fmt, ...)
{
    va_list ap;
    char buf[1024];

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (llama_log_rank >= 0) {
        fprintf(stderr, "sharc-llama[%d]: error: %s\n", llama_log_rank, buf);
    } else {
        fprintf(stderr, "sharc-llama: error: %s\n", buf);
    }
}

void llama_info(const char *fmt, ...)
{
    va_list ap;

    if (llama_log_rank > 0) {
        return;
    }
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

int llama_open_file(const char *path, uint64_t *size_p)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        llama_err("%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        llama_err("%s: not a readable regular file", path);
        close(fd);
        return -1;
    }
    *size_p = (uint64_t)sb.st_size;
    return fd;
}

sharc_status_t llama_write_all(int fd, const char *path, const void *buf, size_t bytes)
{
    const char *p = buf;
    ssize_t ret;

    while (bytes > 0) {
        ret = write(fd, p, bytes);
        if (ret < 0 && errno == EINTR) {
            continue;
        }
        if (ret < 0) {
            llama_err("%s: write failed: %s", path, strerror(errno));
            return SHARC_ERR_IO;
        }
        p += ret;
        bytes -= (size_t)ret;
    }
    return SHARC_OK;
}

double llama_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint64_t llama_splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static float bits_to_f32(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

static uint32_t f32_to_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

float llama_bf16_to_f32(uint16_t b)
{
    return bits_to_f32((uint32_t)b << 16);
}

uint16_t llama_f32_to_bf16(float f)
{
    uint32_t u = f32_to_bits(f);

    if (isnan(f)) {
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN, sign kept */
    }
    /* round to nearest even on the 16 bits dropped */
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

float llama_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;

    if (exp == 0x1f) { /* Inf / NaN */
        return bits_to_f32(sign | 0x7f800000u | (man << 13));
    }
    if (exp == 0) { /* zero or subnormal: man * 2^-24 */
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    return bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t llama_f32_to_f16(float f)
{
    uint32_t u = f32_to_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    float a = fabsf(f);

    if (isnan(f)) {
        return sign | 0x7e00;
    }
    if (a >= 65520.0f) { /* rounds past the largest finite half */
        return sign | 0x7c00;
    }
    if (a < 6.103515625e-05f) { /* subnormal half: multiples of 2^-24, nearbyint is RNE */
        return sign | (uint16_t)nearbyintf(a * 16777216.0f);
    }
    u = f32_to_bits(a);
    /* rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to even */
    u = u - (112u << 23);
    u = u + 0xfff + ((u >> 13) & 1);
    return sign | (uint16_t)(u >> 13);
}
