// grid_check: the grid barrier's self-check (persist/grid-check.ts runs it when a device is created). One dispatch
// of p.n workgroups of THREADS threads (the persistent kernels' size, so that as many can be resident) runs
// p.steps dependent steps through grid_sync (barrier.inc.wgsl). At step s workgroup g reads the value every
// workgroup wrote at step s - 1, by atomic loads spread over its threads, and writes
//   vals[s][g] = (sum over j of vals[s - 1][j] * (2j + 1)) * 0x9e3779b1 + g * 7 + s   (u32, wrapping),
// vals[0][g] = g * 0x01000193 + 1; a workgroup that reads a stale value writes a wrong one, and every later step
// carries it to every workgroup. The CPU recomputes all of them. A failed barrier leaves the rest of vals at 0.

struct Params { n: u32, absent_at: u32, spin: u32, steps: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> ctl: array<atomic<u32>>;    // [3], barrier.inc.wgsl
@group(0) @binding(2) var<storage, read_write> vals: array<atomic<u32>>;   // [steps + 1, n]

override THREADS: u32 = 256u;

var<workgroup> red: array<u32, THREADS>;

// #include "persist/barrier.inc.wgsl"

@compute @workgroup_size(THREADS)
fn grid_check(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let g = wid.x;
  if (tid == 0u) { atomicStore(&vals[g], g * 0x01000193u + 1u); }
  for (var s = 1u; s <= p.steps; s++) {
    if (!grid_sync(tid, s - 1u)) { break; }
    var sum = 0u;
    for (var j = tid; j < p.n; j += THREADS) { sum += atomicLoad(&vals[(s - 1u) * p.n + j]) * (2u * j + 1u); }
    red[tid] = sum;
    workgroupBarrier();
    for (var span = THREADS / 2u; span > 0u; span >>= 1u) {
      if (tid < span) { red[tid] += red[tid + span]; }
      workgroupBarrier();
    }
    if (tid == 0u) { atomicStore(&vals[s * p.n + g], red[0] * 0x9e3779b1u + g * 7u + s); }
    workgroupBarrier();   // red[0] is read before the next step's sums overwrite it
  }
  grid_exit(tid);
}
