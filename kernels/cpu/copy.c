/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * copy.c: the bulk host copy the transports and collectives use to move message data
 * (sharc_kern_copy in kernels.h). From SHARC_KERN_STREAM_MIN bytes up it writes with
 * non-temporal (streaming) stores: the destination lines are not read first and do not
 * displace the cache, which is what a copy of data nobody reads soon wants; on a machine
 * whose copies are bound by memory traffic that is up to a third fewer bytes moved. Smaller
 * copies, and machines without SSE2, use memcpy.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "../kernels.h"

#if defined(__x86_64__) || defined(__SSE2__)
#include <emmintrin.h>

static void sharc_kern_copy_stream(char *dst, const char *src, size_t bytes)
{
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;

    memcpy(dst, src, head); /* up to the first 16-byte boundary of dst */
    dst += head;
    src += head;
    bytes -= head;
    for (; bytes >= 64; bytes -= 64, dst += 64, src += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)src);
        __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + 48));

        _mm_stream_si128((__m128i *)dst, a);
        _mm_stream_si128((__m128i *)(dst + 16), b);
        _mm_stream_si128((__m128i *)(dst + 32), c);
        _mm_stream_si128((__m128i *)(dst + 48), d);
    }
    _mm_sfence(); /* streaming stores are weakly ordered: finish them before anyone looks */
    memcpy(dst, src, bytes);
}
#endif

void sharc_kern_copy(void *dst, const void *src, size_t bytes)
{
#if defined(__x86_64__) || defined(__SSE2__)
    if (bytes >= SHARC_KERN_STREAM_MIN) {
        sharc_kern_copy_stream(dst, src, bytes);
        return;
    }
#endif
    if (bytes > 0) {
        memcpy(dst, src, bytes);
    }
}
