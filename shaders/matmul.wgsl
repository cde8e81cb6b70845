// fusegraph tiled matmul (WGSL), filled by core/src/codegen.
//
// out[b, i, j] = epilogue(sum_k A[b, i, k] * B[b, k, j]). A 16x16 workgroup
// computes a 128x128 output tile; each invocation holds an 8x8 register
// block: rows 4*ty..4*ty+3 and 64+4*ty..64+4*ty+3, columns likewise with tx,
// so its operands are two vec4 reads per tile row of workgroup memory. K
// advances 8 at a time. The loaders fg_load_a/fg_load_b (spliced in by the
// renderer) read through the operands' strides, so transposed views need no
// copy, and return zero outside the matrix so edge tiles need no special
// case. Batches run along workgroup_id.z, striding when there are more than
// 65535.
//@@ main
// fg_ta is A's tile transposed ([k][m] as vec4 of m) with one vec4 of
// padding per k row: the transposing store then hits 32 distinct banks.
var<workgroup> fg_ta: array<array<vec4<{{ACC}}>, 33>, 8>;
var<workgroup> fg_tb: array<array<vec4<{{ACC}}>, 32>, 8>;

fn fg_mac4(acc: vec4<{{ACC}}>, x: {{ACC}}, y: vec4<{{ACC}}>) -> vec4<{{ACC}}> {
    return vec4<{{ACC}}>(fg_mac(acc.x, x, y.x), fg_mac(acc.y, x, y.y), fg_mac(acc.z, x, y.z), fg_mac(acc.w, x, y.w));
}

// Four neighbouring output elements of row i from column j on.
fn fg_out4(b: i32, i: i32, j: i32, v: vec4<{{ACC}}>) {
    if (i >= {{M}}) {
        return;
    }
    for (var c = 0; c < 4; c = c + 1) {
        if (j + c < {{N}}) {
            fg_write_mm(b, i, j + c, v[c]);
        }
    }
}

@compute @workgroup_size(16, 16, 1)
fn {{NAME}}(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
{{PROLOGUE}}
    let tx = i32(lid.x);
    let ty = i32(lid.y);
    let t = ty * 16 + tx;
    let m0 = i32(wid.y) * 128;
    let n0 = i32(wid.x) * 128;
    // Every index into acc is a constant, so it lives in registers.
    var acc: array<vec4<{{ACC}}>, 16>;
    let z = vec4<{{ACC}}>({{ZERO}});
    for (var b = i32(wid.z); b < {{BATCH}}; b = b + {{ZSTEP}}) {
        let base_a = fg_base_a(b);
        let base_b = fg_base_b(b);
        acc = array<vec4<{{ACC}}>, 16>(z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z);
        for (var k0 = 0; k0 < {{K}}; k0 = k0 + 8) {
            for (var q = 0; q < 4; q = q + 1) {
                let l = t + q * 256;
                // A: 128 rows x 8 k; neighbouring invocations read neighbouring k of one row.
                let ar = l / 8;
                let ak = l % 8;
                fg_ta[ak][ar / 4][ar % 4] = fg_load_a(base_a, m0 + ar, k0 + ak);
                // B: 8 k x 128 columns; neighbouring invocations read neighbouring columns.
                let bk = l / 128;
                let bc = l % 128;
                fg_tb[bk][bc / 4][bc % 4] = fg_load_b(base_b, k0 + bk, n0 + bc);
            }
            workgroupBarrier();
            for (var kk = 0; kk < 8; kk = kk + 1) {
                let a0 = fg_ta[kk][ty];
                let a1 = fg_ta[kk][ty + 16];
                let b0 = fg_tb[kk][tx];
                let b1 = fg_tb[kk][tx + 16];
                acc[0] = fg_mac4(acc[0], a0.x, b0);
                acc[1] = fg_mac4(acc[1], a0.x, b1);
                acc[2] = fg_mac4(acc[2], a0.y, b0);
                acc[3] = fg_mac4(acc[3], a0.y, b1);
                acc[4] = fg_mac4(acc[4], a0.z, b0);
                acc[5] = fg_mac4(acc[5], a0.z, b1);
                acc[6] = fg_mac4(acc[6], a0.w, b0);
                acc[7] = fg_mac4(acc[7], a0.w, b1);
                acc[8] = fg_mac4(acc[8], a1.x, b0);
                acc[9] = fg_mac4(acc[9], a1.x, b1);
                acc[10] = fg_mac4(acc[10], a1.y, b0);
                acc[11] = fg_mac4(acc[11], a1.y, b1);
                acc[12] = fg_mac4(acc[12], a1.z, b0);
                acc[13] = fg_mac4(acc[13], a1.z, b1);
                acc[14] = fg_mac4(acc[14], a1.w, b0);
                acc[15] = fg_mac4(acc[15], a1.w, b1);
            }
            workgroupBarrier();
        }
        let i0 = m0 + ty * 4;
        let i1 = i0 + 64;
        let j0 = n0 + tx * 4;
        let j1 = j0 + 64;
        fg_out4(b, i0, j0, acc[0]);
        fg_out4(b, i0, j1, acc[1]);
        fg_out4(b, i0 + 1, j0, acc[2]);
        fg_out4(b, i0 + 1, j1, acc[3]);
        fg_out4(b, i0 + 2, j0, acc[4]);
        fg_out4(b, i0 + 2, j1, acc[5]);
        fg_out4(b, i0 + 3, j0, acc[6]);
        fg_out4(b, i0 + 3, j1, acc[7]);
        fg_out4(b, i1, j0, acc[8]);
        fg_out4(b, i1, j1, acc[9]);
        fg_out4(b, i1 + 1, j0, acc[10]);
        fg_out4(b, i1 + 1, j1, acc[11]);
        fg_out4(b, i1 + 2, j0, acc[12]);
        fg_out4(b, i1 + 2, j1, acc[13]);
        fg_out4(b, i1 + 3, j0, acc[14]);
        fg_out4(b, i1 + 3, j1, acc[15]);
    }
}
