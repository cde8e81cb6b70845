// fusegraph tiled matmul (WGSL), filled by core/src/codegen.
//
// out[b, i, j] = epilogue(sum_k A[b, i, k] * B[b, k, j]). A 16x16 workgroup
// computes a 64x64 output tile; each invocation holds a 4x4 register block
// strided by 16 rows/columns, so neighbouring invocations read neighbouring
// words of the shared tiles. K advances 16 at a time through workgroup
// memory. The loaders fg_load_a/fg_load_b (spliced in by the renderer) read
// through the operands' strides, so transposed views need no copy, and return
// zero outside the matrix so edge tiles need no special case. Batches run
// along workgroup_id.z, striding when there are more than 65535.
//@@ main
// fg_ta is [k][m] with one column of padding: the transposing store from a
// row-major A tile would otherwise put 16 invocations on one bank.
var<workgroup> fg_ta: array<array<{{ACC}}, 65>, 16>;
var<workgroup> fg_tb: array<array<{{ACC}}, 64>, 16>;

@compute @workgroup_size(16, 16, 1)
fn {{NAME}}(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
{{TOUCH}}
    let tx = i32(lid.x);
    let ty = i32(lid.y);
    let t = ty * 16 + tx;
    let m0 = i32(wid.y) * 64;
    let n0 = i32(wid.x) * 64;
    var acc: array<{{ACC}}, 16>;
    var av: array<{{ACC}}, 4>;
    var bv: array<{{ACC}}, 4>;
    for (var b = i32(wid.z); b < {{BATCH}}; b = b + {{ZSTEP}}) {
        let base_a = fg_base_a(b);
        let base_b = fg_base_b(b);
        for (var q = 0; q < 16; q = q + 1) {
            acc[q] = {{ZERO}};
        }
        for (var k0 = 0; k0 < {{K}}; k0 = k0 + 16) {
            for (var q = 0; q < 4; q = q + 1) {
                let l = t + q * 256;
                fg_ta[l % 16][l / 16] = fg_load_a(base_a, m0 + l / 16, k0 + l % 16);
                fg_tb[l / 64][l % 64] = fg_load_b(base_b, k0 + l / 64, n0 + l % 64);
            }
            workgroupBarrier();
            for (var kk = 0; kk < 16; kk = kk + 1) {
                for (var r = 0; r < 4; r = r + 1) {
                    av[r] = fg_ta[kk][ty + 16 * r];
                    bv[r] = fg_tb[kk][tx + 16 * r];
                }
                for (var r = 0; r < 4; r = r + 1) {
                    for (var c = 0; c < 4; c = c + 1) {
                        acc[r * 4 + c] = fg_mac(acc[r * 4 + c], av[r], bv[c]);
                    }
                }
            }
            workgroupBarrier();
        }
        for (var r = 0; r < 4; r = r + 1) {
            for (var c = 0; c < 4; c = c + 1) {
                let i = m0 + ty + 16 * r;
                let j = n0 + tx + 16 * c;
                if (i < {{M}} && j < {{N}}) {
                    fg_write_mm(b, i, j, acc[r * 4 + c]);
                }
            }
        }
    }
}
