/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_emu_blas.h: the cuBLAS and cuBLASLt of the host emulation of CUDA (cuda_emu.h, which
 * includes it at its end, after the runtime's types): GEMMs as plain loops with f32
 * accumulation and cuBLAS's column-major arguments; cuBLASLt's descriptors checked against
 * each other and their products through the same loops. Not included alone.
 */
#ifndef SHARC_TEST_CUDA_EMU_BLAS_H
#define SHARC_TEST_CUDA_EMU_BLAS_H

/* ---- cuBLAS: column-major GEMMs as plain loops -------------------------------------------- */

typedef struct emu_blas *cublasHandle_t;
typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;

inline cublasStatus_t cublasCreate(cublasHandle_t *h)
{
    static int dummy;
    *h = (cublasHandle_t)&dummy;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t h)
{
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    return CUBLAS_STATUS_SUCCESS;
}
inline const char *cublasGetStatusString(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS         ? "success"
           : s == CUBLAS_STATUS_NOT_SUPPORTED ? "not supported"
                                              : "invalid value";
}

namespace cuda_emu
{
inline float elem(const void *p, cudaDataType_t t, size_t i)
{
    return t == CUDA_R_32F ? ((const float *)p)[i]
                           : __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}

inline void set(void *p, cudaDataType_t t, size_t i, float v)
{
    if (t == CUDA_R_32F) {
        ((float *)p)[i] = v;
    } else {
        ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
    }
}

/* C (m,n) = alpha op(A) op(B) + beta C, column-major; C is not read when beta is 0 */
inline cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           float alpha, const void *A, cudaDataType_t at, int lda, const void *B,
                           cudaDataType_t bt, int ldb, float beta, void *C, cudaDataType_t ct,
                           int ldc)
{
    if (m < 0 || n < 0 || k < 0 || lda < (ta == CUBLAS_OP_N ? m : k) ||
        ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            float s = 0.0f;
            for (int l = 0; l < k; l++) {
                float a = ta == CUBLAS_OP_N ? elem(A, at, i + (size_t)l * lda)
                                            : elem(A, at, l + (size_t)i * lda);
                float b = tb == CUBLAS_OP_N ? elem(B, bt, l + (size_t)j * ldb)
                                            : elem(B, bt, j + (size_t)l * ldb);
                s += a * b;
            }
            size_t c = i + (size_t)j * ldc;
            set(C, ct, c, alpha * s + (beta != 0.0f ? beta * elem(C, ct, c) : 0.0f));
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}
} // namespace cuda_emu

inline cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const void *alpha, const void *A,
                                   cudaDataType_t at, int lda, const void *B, cudaDataType_t bt,
                                   int ldb, const void *beta, void *C, cudaDataType_t ct, int ldc,
                                   cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    return cuda_emu::gemm(ta, tb, m, n, k, *(const float *)alpha, A, at, lda, B, bt, ldb,
                          *(const float *)beta, C, ct, ldc);
}

inline cublasStatus_t
cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const void *alpha, const void *A, cudaDataType_t at,
                           int lda, long long sa, const void *B, cudaDataType_t bt, int ldb,
                           long long sb, const void *beta, void *C, cudaDataType_t ct, int ldc,
                           long long sc, int batch, cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    size_t ea = at == CUDA_R_32F ? 4 : 2, eb = bt == CUDA_R_32F ? 4 : 2;
    size_t ec = ct == CUDA_R_32F ? 4 : 2;

    for (int i = 0; i < batch; i++) {
        cublasStatus_t st =
            cuda_emu::gemm(ta, tb, m, n, k, *(const float *)alpha, (const char *)A + i * sa * ea,
                           at, lda, (const char *)B + i * sb * eb, bt, ldb, *(const float *)beta,
                           (char *)C + i * sc * ec, ct, ldc);
        if (st != CUBLAS_STATUS_SUCCESS) {
            return st;
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- cuBLASLt: descriptors as structs, products through the same loops ---------------------- */

typedef struct emu_lt *cublasLtHandle_t;
typedef enum {
    CUBLASLT_MATMUL_DESC_TRANSA = 3,
    CUBLASLT_MATMUL_DESC_TRANSB = 4
} cublasLtMatmulDescAttributes_t;
typedef enum {
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8
} cublasLtMatmulPreferenceAttributes_t;

struct emu_lt_desc {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    int32_t trans[2]; /* A's, B's (cublasOperation_t, as the attributes' int32) */
};
struct emu_lt_layout {
    cudaDataType_t type;
    uint64_t rows, cols;
    int64_t ld;
};
struct emu_lt_pref {
    uint64_t max_ws;
    uint32_t align[4]; /* A, B, C, D; cuBLASLt's default is 256 bytes */
};
typedef emu_lt_desc *cublasLtMatmulDesc_t;
typedef emu_lt_layout *cublasLtMatrixLayout_t;
typedef emu_lt_pref *cublasLtMatmulPreference_t;
typedef struct {
    uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

inline cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    static int dummy;
    *h = (cublasLtHandle_t)&dummy;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c,
                                               cudaDataType_t scale)
{
    *d = new emu_lt_desc{c, scale, {CUBLAS_OP_N, CUBLAS_OP_N}};
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    delete d;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                                     cublasLtMatmulDescAttributes_t a,
                                                     const void *buf, size_t bytes)
{
    if (buf == NULL || bytes != sizeof(int32_t) ||
        (a != CUBLASLT_MATMUL_DESC_TRANSA && a != CUBLASLT_MATMUL_DESC_TRANSB)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    memcpy(&d->trans[a == CUBLASLT_MATMUL_DESC_TRANSB], buf, bytes);
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType_t t,
                                                 uint64_t rows, uint64_t cols, int64_t ld)
{
    if (ld < (int64_t)rows) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    *l = new emu_lt_layout{t, rows, cols, ld};
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    delete l;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    *p = new emu_lt_pref{0, {256, 256, 256, 256}};
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    delete p;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                           cublasLtMatmulPreferenceAttributes_t a,
                                                           const void *buf, size_t bytes)
{
    if (buf == NULL) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (a == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && bytes == sizeof(uint64_t)) {
        memcpy(&p->max_ws, buf, bytes);
    } else if (a >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
               a <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES && bytes == sizeof(uint32_t)) {
        memcpy(&p->align[a - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, bytes);
    } else {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    return CUBLAS_STATUS_SUCCESS;
}

namespace cuda_emu
{
/* the workspace the emulated algorithms ask for: some, so that a missing one shows */
const uint64_t lt_ws_need = 1 << 20;
const uint64_t lt_magic = 0x5eed1a7b1a5u;

/* the product's m, n, k from the layouts and transposes; false where they disagree */
inline bool lt_dims(const emu_lt_desc *d, const emu_lt_layout *a, const emu_lt_layout *b,
                    const emu_lt_layout *c, const emu_lt_layout *dd, int *m, int *n, int *k)
{
    uint64_t am = d->trans[0] == CUBLAS_OP_N ? a->rows : a->cols;
    uint64_t ak = d->trans[0] == CUBLAS_OP_N ? a->cols : a->rows;
    uint64_t bk = d->trans[1] == CUBLAS_OP_N ? b->rows : b->cols;
    uint64_t bn = d->trans[1] == CUBLAS_OP_N ? b->cols : b->rows;

    if (am != c->rows || bn != c->cols || ak != bk || c->rows != dd->rows || c->cols != dd->cols ||
        c->type != dd->type || c->ld != dd->ld) {
        return false;
    }
    *m = (int)am;
    *n = (int)bn;
    *k = (int)ak;
    return true;
}

/* the types cuBLASLt multiplies in f32 (the ones sharc-llama uses): f32 throughout, or bf16
 * A and B into bf16 or f32 C */
inline bool lt_types(const emu_lt_desc *d, const emu_lt_layout *a, const emu_lt_layout *b,
                     const emu_lt_layout *c)
{
    return d->compute == CUBLAS_COMPUTE_32F && d->scale == CUDA_R_32F && a->type == b->type &&
           (a->type == CUDA_R_32F ? c->type == CUDA_R_32F : true);
}

inline uint32_t lt_align(const void *p)
{
    uint32_t a = 1;

    while (a < 256 && ((uintptr_t)p & a) == 0) {
        a <<= 1;
    }
    return a;
}
} // namespace cuda_emu

inline cublasStatus_t
cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                               cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                               cublasLtMatrixLayout_t dd, cublasLtMatmulPreference_t pref,
                               int requested, cublasLtMatmulHeuristicResult_t *results, int *count)
{
    int m, n, k;
    const char *none = getenv("SHARCTEST_EMU_LT_NOALGO");

    if (requested < 1 || results == NULL || count == NULL ||
        !cuda_emu::lt_dims(d, a, b, c, dd, &m, &n, &k)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    *count = 0;
    if (!cuda_emu::lt_types(d, a, b, c) || pref->max_ws < cuda_emu::lt_ws_need ||
        (none != NULL && *none != '\0')) {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    memset(&results[0], 0, sizeof(results[0]));
    /* what the algorithm was chosen for, checked where it is used */
    uint64_t *v = results[0].algo.data;
    v[0] = cuda_emu::lt_magic;
    v[1] = (uint64_t)m;
    v[2] = (uint64_t)n;
    v[3] = (uint64_t)k;
    v[4] = (uint64_t)d->trans[0] | (uint64_t)d->trans[1] << 8;
    v[5] = (uint64_t)pref->align[0] | (uint64_t)pref->align[1] << 16 |
           (uint64_t)pref->align[2] << 32 | (uint64_t)pref->align[3] << 48;
    results[0].workspaceSize = cuda_emu::lt_ws_need;
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *count = 1;
    return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha,
                                     const void *A, cublasLtMatrixLayout_t a, const void *B,
                                     cublasLtMatrixLayout_t b, const void *beta, const void *C,
                                     cublasLtMatrixLayout_t c, void *D, cublasLtMatrixLayout_t dd,
                                     const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes,
                                     cudaStream_t s)
{
    int m, n, k;
    uintptr_t ws_start = 0;
    size_t ws_len = 0;

    if (algo == NULL || !cuda_emu::lt_dims(d, a, b, c, dd, &m, &n, &k) ||
        !cuda_emu::lt_types(d, a, b, c)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    const uint64_t *v = algo->data;
    if (v[0] != cuda_emu::lt_magic || v[1] != (uint64_t)m || v[2] != (uint64_t)n ||
        v[3] != (uint64_t)k || v[4] != ((uint64_t)d->trans[0] | (uint64_t)d->trans[1] << 8)) {
        return CUBLAS_STATUS_INVALID_VALUE; /* an algorithm chosen for another product */
    }
    /* pointers less aligned than the heuristic was told: its algorithm may not take them */
    const void *ptrs[4] = {A, B, C, D};
    for (int i = 0; i < 4; i++) {
        if (cuda_emu::lt_align(ptrs[i]) < (uint32_t)((v[5] >> (16 * i)) & 0xffff)) {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
    }
    if (ws_bytes < cuda_emu::lt_ws_need ||
        cuda_emu::mem_find(ws, &ws_start, &ws_len) != cuda_emu::MEM_DEVICE ||
        (uintptr_t)ws + ws_bytes > ws_start + ws_len) {
        return CUBLAS_STATUS_INVALID_VALUE; /* the workspace must be device memory */
    }
    float bt = *(const float *)beta;
    size_t ec = c->type == CUDA_R_32F ? 4 : 2;
    if (C != D && bt != 0.0f) {
        for (uint64_t j = 0; j < c->cols; j++) {
            memmove((char *)D + j * dd->ld * ec, (const char *)C + j * c->ld * ec, c->rows * ec);
        }
    }
    cublasOperation_t ta = (cublasOperation_t)d->trans[0], tb = (cublasOperation_t)d->trans[1];
    return cuda_emu::gemm(ta, tb, m, n, k, *(const float *)alpha, A, a->type, (int)a->ld, B,
                          b->type, (int)b->ld, bt, D, dd->type, (int)dd->ld);
}

#endif
