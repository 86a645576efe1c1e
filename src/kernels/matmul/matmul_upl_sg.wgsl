enable subgroups;
// gemv_upl_sg: matmul_upl.wgsl's gemv_upl with the lane reduction on subgroups: subgroupAdd within each subgroup,
// the subgroup's lowest lane writes the partials to shared memory, one barrier, then each output lane adds its
// WG / subgroup-size partials (instead of a tree with log2(WG) barriers). A module of its own because `enable
// subgroups` fails to compile where the adapter lacks the feature; gemv.ts picks it only where gpu.subgroups.
// Neither the subgroup size (4..128 in practice) nor which lanes form a subgroup is assumed: the leading lanes mark
// themselves in a bit mask, and the partials are added in lane order, so the result does not depend on timing.

// #include "matmul/linear.inc.wgsl"
// #include "matmul/gemv_block.inc.wgsl"
// #include "matmul/gemv_upl.inc.wgsl"

var<workgroup> leaders: array<atomic<u32>, 8>;   // bit l of word l / 32: lane l leads a subgroup (WG <= 256)

// Output segment o's sum: the partials of the leading lanes, in lane order.
fn leader_sum(o: u32) -> f32 {
  var s = -0.0;   // -0 + x is x for every x (a +0 start would turn a -0 sum into +0)
  for (var word = 0u; word < (WG + 31u) / 32u; word++) {
    var bits = atomicLoad(&leaders[word]);
    while (bits != 0u) {
      s += red[o * WG + word * 32u + countTrailingZeros(bits)];
      bits &= bits - 1u;
    }
  }
  return s;
}

@compute @workgroup_size(WG)
fn gemv_upl_sg(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let blk = wid.x + wid.y * nwg.x;
  let m0 = wid.z * MB;
  let acc = upl_sums(blk, m0, lid);
  var sums: array<f32, MAXACC>;
  for (var o = 0u; o < ROWS * MB; o++) { sums[o] = subgroupAdd(acc[o]); }
  if (lid == subgroupMin(lid)) {
    atomicOr(&leaders[lid / 32u], 1u << (lid % 32u));
    for (var o = 0u; o < ROWS * MB; o++) { red[o * WG + lid] = sums[o]; }
  }
  workgroupBarrier();
  let s = out_segs(lid);
  store_lane(lid, blk, m0, leader_sum(s.x), select(0.0, leader_sum(s.y), SWIGLU));
}
