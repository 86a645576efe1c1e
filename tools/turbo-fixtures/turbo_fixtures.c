// Quantizes known K/V rows with the TurboQuant fork's own CPU functions (ggml/src/ggml-turbo-quant.c:
// quantize_row_turbo{2,3,4}_0_ref, dequantize_row_turbo{2,3,4}_0, turbo_cpu_fwht_inverse) and prints them as JSON
// for tests/fixtures/turbo/. Rows of head dim 64 are zero-padded to 128 first, as the fork's KV cache does
// (src/llama-kv-cache.cpp cpy_k/cpy_v: ggml_pad to the next multiple of 128, WHT group 128 in op_params).
// Rows come from xorshift32 and sums of four 24-bit uniforms, exact in double, so a test can regenerate them;
// they are printed anyway, as f32 bit patterns.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

// The fork's functions (ggml-quants.h takes ggml's internal headers; the blocks are plain bytes here).
extern int turbo3_cpu_wht_group_size;
void quantize_row_turbo2_0_ref(const float * x, void * y, int64_t k);
void quantize_row_turbo3_0_ref(const float * x, void * y, int64_t k);
void quantize_row_turbo4_0_ref(const float * x, void * y, int64_t k);
void dequantize_row_turbo2_0(const void * x, float * y, int64_t k);
void dequantize_row_turbo3_0(const void * x, float * y, int64_t k);
void dequantize_row_turbo4_0(const void * x, float * y, int64_t k);
void turbo_cpu_fwht_inverse(float * x, int group_size);

#define G 128
static const int BLOCK_BYTES[3] = { 34, 50, 68 }; // turbo2_0, turbo3_0, turbo4_0 at QK = 128

static uint32_t state;
static double uniform(void) {
    state ^= state << 13; state ^= state >> 17; state ^= state << 5;
    return (double)(state >> 8) / 16777216.0;
}

static void hexf(const float * v, int n) {
    printf("\"");
    for (int i = 0; i < n; i++) { uint32_t b; memcpy(&b, &v[i], 4); printf("%08x", b); }
    printf("\"");
}

static void hexb(const uint8_t * v, int n) {
    printf("\"");
    for (int i = 0; i < n; i++) printf("%02x", v[i]);
    printf("\"");
}

// kind: 0 gaussian-ish, 1 all zero, 2 negative only, 3 one spike, 4 constant
static void make_row(float * x, int dim, int kind, uint32_t seed, float scale) {
    state = seed;
    for (int i = 0; i < dim; i++) {
        double g = uniform() + uniform() + uniform() + uniform() - 2.0;
        double v = kind == 0 ? g : kind == 1 ? 0.0 : kind == 2 ? -(g < 0 ? -g : g) - 0.01
                 : kind == 3 ? (i == 5 ? 1.0 : 0.0) : 1.0;
        x[i] = (float)(v * scale);
    }
}

static void emit(const char * name, int dim, int kind, uint32_t seed, float scale, int full, int first) {
    float x[G] = { 0 };
    make_row(x, dim, kind, seed, scale);
    printf("%s\n  {\"name\": \"%s\", \"dim\": %d, \"kind\": %d, \"seed\": %u, \"scale\": %.9g,\n   \"x\": ",
           first ? "" : ",", name, dim, kind, seed, scale);
    hexf(x, dim);
    void (*quant[3])(const float *, void *, int64_t) = { quantize_row_turbo2_0_ref, quantize_row_turbo3_0_ref,
                                                        quantize_row_turbo4_0_ref };
    void (*dequant[3])(const void *, float *, int64_t) = { dequantize_row_turbo2_0, dequantize_row_turbo3_0,
                                                          dequantize_row_turbo4_0 };
    const char * names[3] = { "turbo2", "turbo3", "turbo4" };
    for (int t = 0; t < 3; t++) {
        uint8_t blk[68];
        float y[G];
        turbo3_cpu_wht_group_size = G;
        quant[t](x, blk, G);
        printf(",\n   \"%s\": {\"block\": ", names[t]);
        hexb(blk, BLOCK_BYTES[t]);
        if (full) {
            dequant[t](blk, y, G);
            printf(", \"rotated\": ");
            hexf(y, G);
            turbo_cpu_fwht_inverse(y, G);
            printf(", \"values\": ");
            hexf(y, G);
        }
        printf("}");
    }
    printf("}");
}

int main(int argc, char ** argv) {
    const char * commit = argc > 1 ? argv[1] : "unknown";
    printf("{\"commit\": \"%s\", \"group\": %d, \"rows\": [", commit, G);
    emit("zero128", 128, 1, 1, 1.0f, 1, 1);
    emit("zero64", 64, 1, 1, 1.0f, 1, 0);
    emit("gauss128", 128, 0, 7, 1.0f, 1, 0);
    emit("gauss64", 64, 0, 8, 1.0f, 1, 0);
    emit("negative128", 128, 2, 9, 3.0f, 1, 0);
    emit("negative64", 64, 2, 10, 0.5f, 1, 0);
    emit("huge128", 128, 0, 11, 30000.0f, 1, 0);   // norm past f16's 65504: the stored norm is inf
    emit("large128", 128, 0, 12, 2000.0f, 1, 0);   // norm near the top of f16's range
    emit("tiny128", 128, 0, 13, 1e-6f, 1, 0);
    emit("spike128", 128, 3, 14, 5.0f, 1, 0);
    emit("constant64", 64, 4, 15, 0.25f, 1, 0);
    for (int r = 0; r < 48; r++) {
        char name[32];
        const int dim = r % 2 ? 64 : 128;
        snprintf(name, sizeof name, "random%d_%d", r, dim);
        emit(name, dim, 0, 1000u + (uint32_t)r, r % 3 == 0 ? 0.1f : r % 3 == 1 ? 1.0f : 17.0f, 0, 0);
    }
    printf("\n]}\n");
    return 0;
}
