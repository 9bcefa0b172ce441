/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_attn_pick: which attention sharc-llama's CUDA tables take for --attention (trainer/ops/
 * cuda/attn_pick.h), and what cuDNN's fused attention is given, on the host, everywhere (no
 * GPU, no cuDNN): auto takes cuDNN's where it runs, else the tiled kernel in bf16, else gemm;
 * an explicit choice that cannot run says why; cuDNN's head sizes; the [B, heads, T, hd] views
 * address every element of the ops' row-major buffers where they are; the plans' keys tell
 * shapes and directions apart.
 */
#include "ops/cuda/attn_pick.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_pick(void)
{
    const char *why = NULL, *no = "libcudnn.so.9 does not open";
    const llama_cuda_attention_t GEMM = LLAMA_CUDA_ATTENTION_GEMM;
    const llama_cuda_attention_t FLASH = LLAMA_CUDA_ATTENTION_FLASH;
    const llama_cuda_attention_t CUDNN = LLAMA_CUDA_ATTENTION_CUDNN;
    const llama_cuda_attention_t AUTO = LLAMA_CUDA_ATTENTION_AUTO;

    /* auto: cuDNN's where it runs, else the tiled kernel in bf16, else gemm */
    CHECK(llama_cuda_attention_pick(AUTO, 1, NULL, &why) == CUDNN);
    CHECK(llama_cuda_attention_pick(AUTO, 1, no, &why) == FLASH);
    CHECK(llama_cuda_attention_pick(AUTO, 0, NULL, &why) == GEMM);
    CHECK(llama_cuda_attention_pick(AUTO, 0, no, &why) == GEMM);
    /* what is asked for, where it runs */
    CHECK(llama_cuda_attention_pick(GEMM, 1, NULL, &why) == GEMM);
    CHECK(llama_cuda_attention_pick(GEMM, 0, no, &why) == GEMM);
    CHECK(llama_cuda_attention_pick(FLASH, 1, NULL, &why) == FLASH);
    CHECK(llama_cuda_attention_pick(FLASH, 1, no, &why) == FLASH);
    CHECK(llama_cuda_attention_pick(CUDNN, 1, NULL, &why) == CUDNN);
    /* ... and where it does not: none, and why */
    why = NULL;
    CHECK(llama_cuda_attention_pick(CUDNN, 1, no, &why) == AUTO);
    CHECK(why == no);
    why = NULL;
    CHECK(llama_cuda_attention_pick(FLASH, 0, NULL, &why) == AUTO);
    CHECK(why != NULL && strstr(why, "bf16") != NULL);
    why = NULL;
    CHECK(llama_cuda_attention_pick(CUDNN, 0, llama_cudnn_shape_why(0, 64), &why) == AUTO);
    CHECK(why != NULL && strstr(why, "bf16") != NULL);
}

static void check_shapes(void)
{
    const char *why;

    CHECK(llama_cudnn_shape_why(1, 64) == NULL);
    CHECK(llama_cudnn_shape_why(1, 128) == NULL);
    for (int hd = 8; hd <= 256; hd += 8) {
        if (hd != 64 && hd != 128) {
            why = llama_cudnn_shape_why(1, hd);
            /* the reason names the head sizes it takes */
            CHECK_MSG(why != NULL && strstr(why, "64 and 128") != NULL, "head size %d", hd);
        }
    }
    CHECK(llama_cudnn_shape_why(0, 64) != NULL);
}

/* every element (b, h, t, d) of the view is where the row-major (B, T, heads, hd) buffer has
 * it, and the view's offsets cover the buffer exactly once */
static void check_view(int B, int T, int heads, int hd)
{
    int64_t dim[4], stride[4];
    size_t n = (size_t)B * T * heads * hd;
    unsigned char *seen = calloc(n, 1);

    llama_cudnn_view(B, T, heads, hd, dim, stride);
    CHECK(dim[0] == B && dim[1] == heads && dim[2] == T && dim[3] == hd);
    CHECK(stride[3] == 1);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < heads; h++) {
            for (int t = 0; t < T; t++) {
                for (int d = 0; d < hd; d++) {
                    int64_t at = b * stride[0] + h * stride[1] + t * stride[2] + d * stride[3];
                    size_t want = (((size_t)b * T + t) * heads + h) * hd + d;
                    CHECK_MSG(at == (int64_t)want, "B %d T %d heads %d hd %d: (%d,%d,%d,%d)", B, T,
                              heads, hd, b, h, t, d);
                    if (at >= 0 && (size_t)at < n) {
                        seen[at]++;
                    }
                }
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        CHECK_MSG(seen[i] == 1, "B %d T %d heads %d hd %d: element %zu seen %d times", B, T, heads,
                  hd, i, seen[i]);
    }
    free(seen);
}

/* the stats: (B, H, T) floats, row (b, h, t) at (b H + h) T + t */
static void check_stats_view(int B, int T, int H)
{
    int64_t dim[4], stride[4];

    llama_cudnn_stats_view(B, T, H, dim, stride);
    CHECK(dim[0] == B && dim[1] == H && dim[2] == T && dim[3] == 1);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                CHECK(b * stride[0] + h * stride[1] + t * stride[2] ==
                      ((int64_t)b * H + h) * T + t);
            }
        }
    }
}

static void check_keys(void)
{
    llama_cudnn_key_t a = llama_cudnn_key(2, 2048, 32, 8, 64, 0);
    llama_cudnn_key_t same = llama_cudnn_key(2, 2048, 32, 8, 64, 0);
    llama_cudnn_key_t others[] = {
        llama_cudnn_key(2, 2048, 32, 8, 64, 1),  llama_cudnn_key(1, 2048, 32, 8, 64, 0),
        llama_cudnn_key(2, 1024, 32, 8, 64, 0),  llama_cudnn_key(2, 2048, 16, 8, 64, 0),
        llama_cudnn_key(2, 2048, 32, 32, 64, 0), llama_cudnn_key(2, 2048, 32, 8, 128, 0),
    };

    CHECK(llama_cudnn_key_eq(&a, &same));
    CHECK(llama_cudnn_key(2, 2048, 32, 8, 64, 7).bwd == 1); /* any nonzero: backward */
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        CHECK_MSG(!llama_cudnn_key_eq(&a, &others[i]), "key %zu", i);
        CHECK_MSG(!llama_cudnn_key_eq(&others[i], &a), "key %zu", i);
    }
}

int main(void)
{
    check_pick();
    check_shapes();
    check_view(1, 1, 1, 64);
    check_view(2, 7, 3, 16);
    check_view(3, 5, 4, 8);   /* GQA's kv buffer and a query buffer, same code */
    check_view(2, 33, 1, 64); /* MQA */
    check_stats_view(2, 9, 4);
    check_keys();
    printf("test_attn_pick: %s\n", check_failures ? "FAILED" : "ok");
    return check_result("test_attn_pick");
}
