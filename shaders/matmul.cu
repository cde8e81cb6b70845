// fusegraph tiled matmul (CUDA C), filled by core/src/codegen. Used when
// cuBLASLt cannot take the case (integer matmul, an epilogue it has no
// fused form for, strides it rejects).
//
// out[b, i, j] = epilogue(sum_k A[b, i, k] * B[b, k, j]). A 16x16 block
// computes a 64x64 output tile; each thread holds a 4x4 register block
// strided by 16 rows/columns, so a warp reads neighbouring words of the
// shared tiles. K advances 16 at a time through shared memory. The loaders
// fg_load_a/fg_load_b read through the operands' strides (transposed views
// need no copy) and return zero outside the matrix, so edge tiles need no
// special case. Batches run along blockIdx.z, striding past 65535.
//@@ main
extern "C" __global__ void __launch_bounds__(256) {{NAME}}({{PARAMS}}) {
{{PROLOGUE}}    // fg_ta is [k][m] with one column of padding: the transposing store from a
    // row-major A tile would otherwise put 16 threads on one bank.
    __shared__ {{ACC}} fg_ta[16][65];
    __shared__ {{ACC}} fg_tb[16][64];
    const int tx = (int)threadIdx.x;
    const int ty = (int)threadIdx.y;
    const int t = ty * 16 + tx;
    const fg_idx m0 = (fg_idx)blockIdx.y * 64;
    const fg_idx n0 = (fg_idx)blockIdx.x * 64;
    for (fg_idx b = (fg_idx)blockIdx.z; b < {{BATCH}}; b += {{ZSTEP}}) {
        const fg_idx base_a = fg_base_a(b);
        const fg_idx base_b = fg_base_b(b);
        {{ACC}} acc[16];
#pragma unroll
        for (int q = 0; q < 16; ++q) {
            acc[q] = {{ZERO}};
        }
        for (fg_idx k0 = 0; k0 < {{K}}; k0 += 16) {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int l = t + q * 256;
                fg_ta[l % 16][l / 16] = fg_load_a({{BUFS}}, base_a, m0 + l / 16, k0 + l % 16);
                fg_tb[l / 64][l % 64] = fg_load_b({{BUFS}}, base_b, k0 + l / 64, n0 + l % 64);
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < 16; ++kk) {
                {{ACC}} av[4];
                {{ACC}} bv[4];
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    av[r] = fg_ta[kk][ty + 16 * r];
                    bv[r] = fg_tb[kk][tx + 16 * r];
                }
#pragma unroll
                for (int r = 0; r < 4; ++r) {
#pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        acc[r * 4 + c] = fg_mac(acc[r * 4 + c], av[r], bv[c]);
                    }
                }
            }
            __syncthreads();
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) {
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const fg_idx i = m0 + ty + 16 * r;
                const fg_idx j = n0 + tx + 16 * c;
                if (i < {{M}} && j < {{N}}) {
                    fg_write_mm({{BUFS}}, b, i, j, acc[r * 4 + c]);
                }
            }
        }
    }
}
