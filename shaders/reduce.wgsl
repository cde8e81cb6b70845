// fusegraph row reduction (WGSL). Sections are filled by core/src/codegen.
//
// One workgroup per row (a position of the kept axes). Every stage folds its
// value over the row with a strided loop (`fold`), so rows longer than the
// workgroup need no second pass, or, when loads are shared by several
// passes and the row is short enough, over this invocation's elements kept
// in a private array (`cache_row`, `fold_cached`, `out_full_cached`); then
// it halves a tree in workgroup memory. Each stage has its own workgroup
// array, so the finished value can be read by every invocation after the
// tree's last barrier without a race against the next stage's writes.
//@@ main
{{SHARED}}
@compute @workgroup_size({{WG}})
fn {{NAME}}(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>{{SG_PARAMS}}) {
{{PROLOGUE}}
    // workgroup_id is uniform, so this early exit keeps the barriers below in uniform control flow.
    let row_u = wid.y * {{GRID_X}}u + wid.x;
    if (row_u >= {{ROWS}}u) {
        return;
    }
    let row = i32(row_u);
    let lid = i32(lid3.x);
{{STAGES}}{{OUTPUT}}}
//@@ shared
var<workgroup> fg_sh{{S}}: array<{{T}}, {{WG}}>;
//@@ shared_argmax
var<workgroup> fg_sh{{S}}: array<{{T}}, {{WG}}>;
var<workgroup> fg_shi{{S}}: array<i32, {{WG}}>;
//@@ stage
{{FOLD}}    fg_sh{{S}}[lid] = acc{{S}};
    workgroupBarrier();
    for (var s = {{HALF}}; s > 0; s = s / 2) {
        if (lid < s) {
            fg_sh{{S}}[lid] = {{COMBINE_TREE}};
        }
        workgroupBarrier();
    }
    let st{{S}} = fg_sh{{S}}[0];
//@@ stage_argmax
    // Ties and NaN: the first (lowest flattened index) maximum wins, NaN beats numbers.
    var acc{{S}}: {{T}} = {{IDENT}};
    var arg{{S}}: i32 = 2147483647;
    for (var r = lid; r < {{ROW_LEN}}; r = r + {{WG}}) {
        let v = {{VALUE}};
        if ({{BETTER}}(v, r, acc{{S}}, arg{{S}})) {
            acc{{S}} = v;
            arg{{S}} = r;
        }
    }
    fg_sh{{S}}[lid] = acc{{S}};
    fg_shi{{S}}[lid] = arg{{S}};
    workgroupBarrier();
    for (var s = {{HALF}}; s > 0; s = s / 2) {
        if (lid < s) {
            let vb = fg_sh{{S}}[lid + s];
            let ib = fg_shi{{S}}[lid + s];
            if ({{BETTER}}(vb, ib, fg_sh{{S}}[lid], fg_shi{{S}}[lid])) {
                fg_sh{{S}}[lid] = vb;
                fg_shi{{S}}[lid] = ib;
            }
        }
        workgroupBarrier();
    }
    let st{{S}} = fg_shi{{S}}[0];
//@@ stage_subgroup
    // With the adapter's subgroups: the fold, the subgroup's own reduction,
    // one partial per subgroup in workgroup memory (written by the first
    // active invocation: naga has no subgroupElect), then every invocation
    // folds the partials in subgroup order. One barrier where a halving tree
    // takes log2(workgroup) + 1.
{{FOLD}}    acc{{S}} = {{SG_COMBINE}};
    if (subgroupBroadcastFirst(lid) == lid) {
        fg_sh{{S}}[sg_id] = acc{{S}};
    }
    workgroupBarrier();
    acc{{S}} = fg_sh{{S}}[0];
    for (var w = 1u; w < sg_count; w = w + 1u) {
        let v = fg_sh{{S}}[w];
        acc{{S}} = {{COMBINE_ACC}};
    }
    let st{{S}} = acc{{S}};
//@@ out_full
    for (var r = lid; r < {{ROW_LEN}}; r = r + {{WG}}) {
        {{WRITE}};
    }
//@@ out_full_cached
    for (var i = 0; i < {{ITEMS}}; i = i + 1) {
        let r = lid + i * {{WG}};
        {{GUARD}}{
            {{WRITE}};
        }
    }
//@@ fold
    var acc{{S}}: {{T}} = {{IDENT}};
    for (var r = lid; r < {{ROW_LEN}}; r = r + {{WG}}) {
        let v = {{VALUE}};
        acc{{S}} = {{COMBINE_ACC}};
    }
//@@ cache_row
    // This invocation's elements of the row, loaded once for every pass.
    var fg_c{{J}}: array<{{T}}, {{ITEMS}}>;
    for (var i = 0; i < {{ITEMS}}; i = i + 1) {
        let r = lid + i * {{WG}};
        {{GUARD}}{
            fg_c{{J}}[i] = {{LOAD}};
        }
    }
//@@ fold_cached
    var acc{{S}}: {{T}} = {{IDENT}};
    for (var i = 0; i < {{ITEMS}}; i = i + 1) {
        let r = lid + i * {{WG}};
        {{GUARD}}{
            let v = {{VALUE}};
            acc{{S}} = {{COMBINE_ACC}};
        }
    }
//@@ out_row
    if (lid == 0) {
        {{WRITE}};
    }
