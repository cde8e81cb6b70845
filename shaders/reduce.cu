// fusegraph row reduction (CUDA C). Sections are filled by core/src/codegen.
//
// One block per row (a position of the kept axes); blocks stride over rows
// when there are more rows than the grid. Every stage folds its value over
// the row with a strided loop (`fold`), or, when loads are shared by
// several passes and the row is short enough, over this thread's elements
// kept in registers (`cache_row`, `fold_cached`, `out_full_cached`), then
// halves a tree in shared memory; each stage has its own shared array, and
// a barrier ends every row so the next row's writes cannot overtake a slow
// thread still reading this row's result.
//@@ main
extern "C" __global__ void __launch_bounds__({{WG}}) {{NAME}}({{PARAMS}}) {
{{PROLOGUE}}{{SHARED}}    const fg_idx lid = (fg_idx)threadIdx.x;
    for (fg_idx row = (fg_idx)blockIdx.x; row < {{ROWS}}; row += (fg_idx)gridDim.x) {
{{STAGES}}{{OUTPUT}}        __syncthreads();
    }
}
//@@ shared
    __shared__ {{T}} fg_sh{{S}}[{{WG}}];
//@@ shared_argmax
    __shared__ {{T}} fg_sh{{S}}[{{WG}}];
    __shared__ int fg_shi{{S}}[{{WG}}];
//@@ stage
{{FOLD}}        fg_sh{{S}}[lid] = acc{{S}};
        __syncthreads();
        for (int s = {{HALF}}; s > 0; s >>= 1) {
            if (lid < s) {
                fg_sh{{S}}[lid] = {{COMBINE_TREE}};
            }
            __syncthreads();
        }
        const {{T}} st{{S}} = fg_sh{{S}}[0];
//@@ fold
        {{T}} acc{{S}} = {{IDENT}};
        for (fg_idx r = lid; r < {{ROW_LEN}}; r += {{WG}}) {
            const {{T}} v = {{VALUE}};
            acc{{S}} = {{COMBINE_ACC}};
        }
//@@ cache_row
        // This thread's elements of the row, loaded once for every pass.
        {{T}} fg_c{{J}}[{{ITEMS}}];
#pragma unroll
        for (int i = 0; i < {{ITEMS}}; i++) {
            const fg_idx r = lid + i * {{WG}};
            {{GUARD}}fg_c{{J}}[i] = {{LOAD}};
        }
//@@ fold_cached
        {{T}} acc{{S}} = {{IDENT}};
#pragma unroll
        for (int i = 0; i < {{ITEMS}}; i++) {
            const fg_idx r = lid + i * {{WG}};
            {{GUARD}}{
                const {{T}} v = {{VALUE}};
                acc{{S}} = {{COMBINE_ACC}};
            }
        }
//@@ stage_argmax
        // Ties and NaN: the first (lowest flattened index) maximum wins, NaN beats numbers.
        {{T}} acc{{S}} = {{IDENT}};
        int arg{{S}} = 2147483647;
        for (fg_idx r = lid; r < {{ROW_LEN}}; r += {{WG}}) {
            const {{T}} v = {{VALUE}};
            if ({{BETTER}}(v, (int)r, acc{{S}}, arg{{S}})) {
                acc{{S}} = v;
                arg{{S}} = (int)r;
            }
        }
        fg_sh{{S}}[lid] = acc{{S}};
        fg_shi{{S}}[lid] = arg{{S}};
        __syncthreads();
        for (int s = {{HALF}}; s > 0; s >>= 1) {
            if (lid < s) {
                const {{T}} vb = fg_sh{{S}}[lid + s];
                const int ib = fg_shi{{S}}[lid + s];
                if ({{BETTER}}(vb, ib, fg_sh{{S}}[lid], fg_shi{{S}}[lid])) {
                    fg_sh{{S}}[lid] = vb;
                    fg_shi{{S}}[lid] = ib;
                }
            }
            __syncthreads();
        }
        const int st{{S}} = fg_shi{{S}}[0];
//@@ out_full
        for (fg_idx r = lid; r < {{ROW_LEN}}; r += {{WG}}) {
            {{WRITE}};
        }
//@@ out_full_cached
#pragma unroll
        for (int i = 0; i < {{ITEMS}}; i++) {
            const fg_idx r = lid + i * {{WG}};
            {{GUARD}}{{WRITE}};
        }
//@@ out_row
        if (lid == 0) {
            {{WRITE}};
        }
//@@ main_serial
// Short rows (a few elements, many rows): one thread per row folds it
// serially, with no shared memory and no barriers; a block per row would
// leave most of its threads idle.
extern "C" __global__ void __launch_bounds__({{WG}}) {{NAME}}({{PARAMS}}) {
{{PROLOGUE}}    const fg_idx step = (fg_idx)gridDim.x * {{WG}};
    for (fg_idx row = (fg_idx)blockIdx.x * {{WG}} + (fg_idx)threadIdx.x; row < {{ROWS}}; row += step) {
{{STAGES}}{{OUTPUT}}    }
}
//@@ stage_serial
        {{T}} acc{{S}} = {{IDENT}};
        for (fg_idx r = 0; r < {{ROW_LEN}}; r++) {
            const {{T}} v = {{VALUE}};
            acc{{S}} = {{COMBINE_ACC}};
        }
        const {{T}} st{{S}} = acc{{S}};
//@@ out_full_serial
        for (fg_idx r = 0; r < {{ROW_LEN}}; r++) {
            {{WRITE}};
        }
//@@ out_row_serial
        {{WRITE}};
