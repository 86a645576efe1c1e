// A bounded grid barrier for the persistent kernels (issue 39), through `// #include "persist/barrier.inc.wgsl"`:
// one dispatch of p.n workgroups runs several dependent steps, its workgroups meeting here instead of at dispatch
// boundaries. The includer declares the binding `ctl: array<atomic<u32>>` (read_write, 3 words: [0] arrivals,
// [1] exits, [2] the run-out flag; 0 before the dispatch) and the uniforms `p.n` (workgroups, all of which must
// call grid_sync at every step and grid_exit once), `p.absent_at` (0xffffffff; a test sets the one barrier that
// waits for p.n + 1 arrivals, a workgroup that never arrives, so its spins run out; every other barrier waits for
// p.n) and `p.spin` (loads a waiting workgroup makes before it gives up).
// Never compiled on its own.
//
// How it works. Thread 0 of each workgroup adds 1 to ctl[0] and spins on atomic loads until the count reaches
// (step + 1) * p.n (+ 1 at p.absent_at). WebGPU promises no forward progress between workgroups: one that is not
// resident cannot arrive while the others spin. So the spin is bounded, and a workgroup that runs out tries to POISON the count (a
// compare-exchange from the count it last saw, below the target, to that count with the top bit set). The barrier
// then has one outcome for every workgroup: if the count reached the target unpoisoned, nobody can poison it any
// more (the exchange expects a count below the target); once it is poisoned, no arrival can see it complete (the
// bit stays; arrivals see it in what atomicAdd returns and leave at once). A failed barrier sets ctl[2] and every
// workgroup leaves the rest of its work, so whatever the steps after it would have written is left untouched: the
// caller redoes the work on the per-op path from the same inputs. Every spin is bounded, so nothing hangs: a
// workgroup that was never resident runs once the others have left and finds the poison. No workgroup reaches a
// barrier after a failed one (each skips to grid_exit), so the poisoned count is never compared with a later goal.
// The last workgroup to leave (grid_exit) sets ctl[0] and ctl[1] back to 0, after every workgroup is done
// spinning, so a captured step can replay the dispatch with the same buffer (the flag stays for the host to read).
//
// What WGSL's memory model gives, and what it does not. Atomics are relaxed and coherent per location; storageBarrier
// is an acquire-release fence on storage memory at workgroup scope only. WGSL has no device-scope fence, so the
// language alone does not promise that a workgroup's stores before its arrival are seen by another workgroup after
// the count completes. Two things are used instead:
//  - data that crosses workgroups between steps goes through atomics (atomicStore / atomicLoad, never a plain load
//    that an SM's L1 could serve from a stale line): Dawn's backends perform WGSL atomics at device scope;
//  - the order between those stores and the arrival: storageBarrier before thread 0's atomicAdd (the whole
//    workgroup's stores are issued before the count), and after the wait, so no load of the next step is issued
//    before the count was seen. On the GPUs this targets, stores and atomics of one workgroup reach the device's
//    coherent level (L2) in that order; the language does not say so. That is why a device uses the persistent
//    kernels only after the self-check (persist/grid-check.ts) ran this barrier at its grid size, every step
//    reading what every workgroup wrote the step before, with every value checked on the CPU.

const POISON: u32 = 0x80000000u;

var<workgroup> grid_ok: u32;

// Arrive at barrier `step` (0, 1, .. within the dispatch) and wait for every workgroup; true in every thread when
// all arrived, false in every thread when the barrier failed (here or in another workgroup): then skip to grid_exit.
fn grid_sync(tid: u32, step: u32) -> bool {
  storageBarrier();   // this workgroup's stores of the step are issued before its arrival
  if (tid == 0u) {
    let goal = (step + 1u) * p.n + select(0u, 1u, step == p.absent_at);
    var seen = atomicAdd(&ctl[0], 1u) + 1u;
    var spins = 0u;
    // Leaves when the count is complete or poisoned. Bounded: after p.spin loads each pass ends in an exchange
    // that either poisons the count or fails because it moved, and it moves at most once for each of the
    // barrier's arrivals (WGSL's weak exchange is a strong one on Dawn's backends).
    loop {
      if ((seen & POISON) != 0u || seen >= goal) { break; }
      if (spins < p.spin) {
        spins++;
        seen = atomicLoad(&ctl[0]);
      } else {
        let r = atomicCompareExchangeWeak(&ctl[0], seen, seen | POISON);
        seen = select(r.old_value, seen | POISON, r.exchanged);
      }
    }
    let ok = (seen & POISON) == 0u;
    if (!ok) { atomicOr(&ctl[2], 1u); }
    grid_ok = select(0u, 1u, ok);
  }
  let ok = workgroupUniformLoad(&grid_ok) == 1u;
  storageBarrier();   // no load of the next step before the count was seen
  return ok;
}

// Leave the dispatch (every workgroup once, on every path): the last to leave zeroes the counts for the next one.
fn grid_exit(tid: u32) {
  workgroupBarrier();
  if (tid == 0u && atomicAdd(&ctl[1], 1u) == p.n - 1u) {
    atomicStore(&ctl[0], 0u);
    atomicStore(&ctl[1], 0u);
  }
}
