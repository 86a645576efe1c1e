// gemv_upl: the matrix-vector product of matmul.wgsl's gemv_vec4 (same bindings, fusions, weight dtypes and output
// side) with every lane's weight loads issued up front (gemv_upl.inc.wgsl), ROWS up to 8. Needs 16-byte rows as
// gemv_vec4 does. gemv.ts picks it where UPL = units per row / WG is a whole number.

// #include "matmul/linear.inc.wgsl"
// #include "matmul/gemv_block.inc.wgsl"
// #include "matmul/gemv_upl.inc.wgsl"

@compute @workgroup_size(WG)
fn gemv_upl(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let blk = wid.x + wid.y * nwg.x;
  let m0 = wid.z * MB;
  reduce_store(upl_sums(blk, m0, lid), lid, blk, m0);
}
