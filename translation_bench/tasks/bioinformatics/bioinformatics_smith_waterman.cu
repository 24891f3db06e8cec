// Batched Smith-Waterman local alignment with affine gaps (Gotoh): 1024 pairs of a 128 bp
// query against a 256 bp target (match +2, mismatch -3, gap open 5, gap extend 2).
// One block per pair, thread i owns DP row i+1 and the block sweeps the anti-diagonals;
// H and F of the previous diagonal are exchanged through double-buffered shared memory with
// one __syncthreads per diagonal. The best cell (max score, then lowest row, then lowest
// column) is found with __shfl_down_sync inside warps and a shared-memory step across warps.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error: %s at %s:%d\n",                      \
                    cudaGetErrorString(err_), __FILE__, __LINE__);            \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static const int PAIRS = 1024, QLEN = 128, TLEN = 256;
static const int MATCH = 2, MISMATCH = -3, GAP_OPEN = 5, GAP_EXT = 2;
static const int NEG = -(1 << 20);

// Packed key: larger is better; ties prefer the lower row, then the lower column.
__host__ __device__ inline unsigned int pack_key(int score, int row, int col) {
    return ((unsigned int)score << 20) | ((unsigned int)(1023 - row) << 10) | (unsigned int)(1023 - col);
}

__global__ void sw_kernel(const char* queries, const char* targets, int* score_out, int* row_out, int* col_out) {
    __shared__ char s_t[TLEN];
    __shared__ int s_h[2][QLEN], s_f[2][QLEN];
    __shared__ unsigned int s_warp[QLEN / 32];
    int pair = blockIdx.x, i = threadIdx.x;              // DP row i+1
    for (int k = i; k < TLEN; k += blockDim.x) s_t[k] = targets[(size_t)pair * TLEN + k];
    char q = queries[(size_t)pair * QLEN + i];
    __syncthreads();

    int h_left = 0, e = NEG, h_diag = 0;                 // H(i+1, j-1), E(i+1, j-1), H(i, j-1)
    unsigned int best = 0;
    for (int d = 0; d < QLEN + TLEN - 1; ++d) {
        int j = d - i + 1;                               // 1-based column of this thread
        int buf = d & 1;
        if (j >= 1 && j <= TLEN) {
            int h_up = (i == 0) ? 0 : s_h[buf ^ 1][i - 1];
            int f_up = (i == 0) ? NEG : s_f[buf ^ 1][i - 1];
            e = max(e - GAP_EXT, h_left - GAP_OPEN);
            int f = max(f_up - GAP_EXT, h_up - GAP_OPEN);
            int h = h_diag + ((q == s_t[j - 1]) ? MATCH : MISMATCH);
            h = max(max(h, 0), max(e, f));
            s_h[buf][i] = h;
            s_f[buf][i] = f;
            h_diag = h_up;
            h_left = h;
            unsigned int key = pack_key(h, i + 1, j);
            if (h > 0 && key > best) best = key;
        }
        __syncthreads();
    }
    for (int off = 16; off > 0; off >>= 1) {
        unsigned int other = __shfl_down_sync(0xFFFFFFFFu, best, off);
        best = other > best ? other : best;
    }
    if ((i & 31) == 0) s_warp[i >> 5] = best;
    __syncthreads();
    if (i == 0) {
        for (int w = 1; w < QLEN / 32; ++w) best = s_warp[w] > best ? s_warp[w] : best;
        score_out[pair] = (int)(best >> 20);
        row_out[pair] = best ? 1023 - (int)((best >> 10) & 1023) : 0;
        col_out[pair] = best ? 1023 - (int)(best & 1023) : 0;
    }
}

// CPU reference for one pair, same recurrences and tie-breaking.
static unsigned int sw_host(const char* q, const char* t) {
    std::vector<int> hprev(TLEN + 1, 0), hcur(TLEN + 1), fprev(TLEN + 1, NEG), fcur(TLEN + 1);
    unsigned int best = 0;
    for (int r = 1; r <= QLEN; ++r) {
        hcur[0] = 0;
        int e = NEG;
        for (int c = 1; c <= TLEN; ++c) {
            e = std::max(e - GAP_EXT, hcur[c - 1] - GAP_OPEN);
            fcur[c] = std::max(fprev[c] - GAP_EXT, hprev[c] - GAP_OPEN);
            int h = hprev[c - 1] + ((q[r - 1] == t[c - 1]) ? MATCH : MISMATCH);
            h = std::max(std::max(h, 0), std::max(e, fcur[c]));
            hcur[c] = h;
            unsigned int key = pack_key(h, r, c);
            if (h > 0 && key > best) best = key;
        }
        hprev.swap(hcur);
        fprev.swap(fcur);
    }
    return best;
}

static uint64_t rng_state = 0xC0AC29B7C97C50DDull;
static uint64_t next_u64() {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

int main(int argc, char** argv) {
    if (argc > 1) {  // optional argument: seed of the input generator (xorshift: not 0)
        rng_state = strtoull(argv[1], nullptr, 0);
        if (rng_state == 0) rng_state = 0xC0AC29B7C97C50DDull;
    }
    const char alphabet[4] = {'A', 'C', 'G', 'T'};
    std::vector<char> q((size_t)PAIRS * QLEN), t((size_t)PAIRS * TLEN);
    for (int p = 0; p < PAIRS; ++p) {
        char* tp = &t[(size_t)p * TLEN];
        char* qp = &q[(size_t)p * QLEN];
        for (int k = 0; k < TLEN; ++k) tp[k] = alphabet[next_u64() >> 62];
        int len = 40 + (int)(next_u64() % 80);             // homologous segment length
        int toff = (int)(next_u64() % (TLEN - len)), qoff = (int)(next_u64() % (QLEN - len));
        int mut = 5 + (int)(next_u64() % 25);              // mutation rate in percent
        for (int k = 0; k < QLEN; ++k) qp[k] = alphabet[next_u64() >> 62];
        for (int k = 0, src = toff; k < len && src < TLEN; ++k, ++src) {
            uint64_t r = next_u64() % 100;
            if (r < (uint64_t)mut) qp[qoff + k] = alphabet[next_u64() >> 62];
            else if (r < (uint64_t)mut + 2) ++src;        // deletion in the query
            else qp[qoff + k] = tp[src];
        }
    }
    char *d_q, *d_t;
    int *d_score, *d_row, *d_col;
    CK(cudaMalloc(&d_q, q.size()));
    CK(cudaMalloc(&d_t, t.size()));
    CK(cudaMalloc(&d_score, PAIRS * sizeof(int)));
    CK(cudaMalloc(&d_row, PAIRS * sizeof(int)));
    CK(cudaMalloc(&d_col, PAIRS * sizeof(int)));
    CK(cudaMemcpy(d_q, q.data(), q.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_t, t.data(), t.size(), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_score, 0xFF, PAIRS * sizeof(int)));
    CK(cudaMemset(d_row, 0xFF, PAIRS * sizeof(int)));
    CK(cudaMemset(d_col, 0xFF, PAIRS * sizeof(int)));

    sw_kernel<<<PAIRS, QLEN>>>(d_q, d_t, d_score, d_row, d_col);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<int> score(PAIRS), row(PAIRS), col(PAIRS);
    CK(cudaMemcpy(score.data(), d_score, PAIRS * sizeof(int), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(row.data(), d_row, PAIRS * sizeof(int), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(col.data(), d_col, PAIRS * sizeof(int), cudaMemcpyDeviceToHost));

    int host_errors = 0;
    for (int p = 0; p < PAIRS; p += 16) {
        unsigned int k = sw_host(&q[(size_t)p * QLEN], &t[(size_t)p * TLEN]);
        host_errors += score[p] != (int)(k >> 20) || row[p] != 1023 - (int)((k >> 10) & 1023) ||
                       col[p] != 1023 - (int)(k & 1023);
    }
    uint64_t h = 0xCBF29CE484222325ull, score_sum = 0;
    int best_pair = 0;
    for (int p = 0; p < PAIRS; ++p) {
        uint64_t v = ((uint64_t)(uint32_t)score[p] << 32) ^ ((uint64_t)(uint32_t)row[p] << 16) ^ (uint32_t)col[p];
        h = (h ^ v) * 0x100000001B3ull;
        h ^= h >> 31;
        score_sum += (uint64_t)score[p];
        if (score[p] > score[best_pair]) best_pair = p;
    }
    printf("checksum 0x%016llx\n", (unsigned long long)h);
    printf("host_check_errors %d\n", host_errors);
    printf("score_sum %llu\n", (unsigned long long)score_sum);
    printf("best_pair %d score %d end (%d,%d)\n", best_pair, score[best_pair], row[best_pair], col[best_pair]);
    printf("pair[0] score %d end (%d,%d)\n", score[0], row[0], col[0]);
    printf("pair[%d] score %d end (%d,%d)\n", PAIRS - 1, score[PAIRS - 1], row[PAIRS - 1], col[PAIRS - 1]);
    CK(cudaFree(d_q));
    CK(cudaFree(d_t));
    CK(cudaFree(d_score));
    CK(cudaFree(d_row));
    CK(cudaFree(d_col));
    return 0;
}
