// The scores half of qsdpa_one.wgsl (see there), shared through `// #include "attention/qsdpa_one.inc.wgsl"` by
// qsdpa_one.wgsl (the cache read-only) and qsdpa_one_append.wgsl (the new key and value written first): the score
// kernels differ only in where the query comes from and in the bindings' access (a writable binding of K could
// not also take V). The includer declares `cq`, `cs`, `cb` (the packed words, scales and biases of K for the
// scores, of V for qone_out) and `fn qv(h, e) -> f32` (element e of head h's query). Never compiled on its own.

struct Params { kv_len: u32, cap: u32, heads: u32, kv_heads: u32, scale: f32, n_chunks: u32, zero: u32, width: u32, log2_base: f32, gate_stride: u32 }

@group(0) @binding(0) var<uniform> p: Params;
// [H, cap] scores, then [H, n_chunks] each chunk's largest score: one binding, so that the appending kernel's K,
// V, query source and scores stay within WebGPU's default 8 storage bindings.
@group(0) @binding(5) var<storage, read_write> scores: array<f32>;

override HD: u32 = 128;    // 64, 128 or 256
override BITS: u32 = 4;    // K's (scores) or V's (qone_out): 2, 3, 4, 5, 6 or 8 (qone_out's VPack spans 8 values in two words)
override ROUND: u32 = 0;

const WG: u32 = 256u;
const MAXF: f32 = 3.4028234663852886e38;
override PACKS: u32 = HD / 32u;          // threads per key in the scores
override CK: u32 = WG / PACKS;           // keys per chunk

var<workgroup> qsh: array<f32, HD>;
var<workgroup> red: array<f32, WG>;

// #include "quant/packed.inc.wgsl"

// packed.inc.wgsl's packed binding: K (scores) or V (out).
fn packed_word(i: u32) -> u32 { return cq[i]; }

// Where chunk c of head h keeps its largest score in `scores`.
fn cmax_at(h: u32, c: u32) -> u32 { return p.heads * p.cap + h * p.n_chunks + c; }

// Value e (0..31) of a pack whose BITS words are in w (it may straddle two words for 3, 5, 6 and 7 bits).
fn unpack(w: ptr<function, array<u32, 8>>, e: u32) -> f32 {
  let bit = e * BITS;
  let i = bit >> 5u;
  let sh = bit & 31u;
  var x = (*w)[i] >> sh;
  if (sh + BITS > 32u) { x |= (*w)[i + 1u] << (32u - sh); }
  return f32(x & ((1u << BITS) - 1u));
}

// This thread's pack of its key in chunk c of head h: the BITS words, scale and bias (keys past kv_len read the
// last key). chunk_scores takes them instead of loading after the query, so the loads are in flight while the
// query is RoPE'd (and, in qsdpa_one_append.wgsl, while the new key is quantized).
struct KeyPack { w: array<u32, 8>, s: f32, b: f32 }

fn key_pack(c: u32, h: u32, t: u32) -> KeyPack {
  var kp: KeyPack;
  let k0 = c * CK;
  if (k0 >= p.kv_len) { return kp; }   // chunk_scores returns at once
  let groups = HD / 64u;
  let krow = (h / (p.heads / p.kv_heads)) * p.cap + min(k0 + t / PACKS, p.kv_len - 1u);
  let pk = t % PACKS;
  let wb = (krow * groups * 2u + pk) * BITS;
  for (var i = 0u; i < BITS; i++) { kp.w[i] = cq[wb + i]; }
  kp.s = cs[krow * groups + pk / 2u];
  kp.b = cb[krow * groups + pk / 2u];
  return kp;
}

// Head h's query (qv), scaled, into qsh: before chunk_scores, which barriers before reading it.
fn load_query(h: u32, t: u32) {
  let sc = round_op(p.scale);
  for (var e = t; e < HD; e += WG) { qsh[e] = round_op(qv(h, e) * sc); }
}

// Scores of chunk wid.x of head wid.y into `scores` from the threads' packs and the query in qsh, and the chunk's
// max.
fn chunk_scores(wid: vec3u, t: u32, kp: KeyPack) {
  let c = wid.x;
  let h = wid.y;
  let k0 = c * CK;
  if (k0 >= p.kv_len) { return; }   // the same for the whole workgroup
  let last = p.kv_len - 1u;
  let pk = t % PACKS;
  var w = kp.w;
  let s = kp.s;
  let b = kp.b;
  workgroupBarrier();
  var dt = 0.0;
  var xs = 0.0;
  for (var e = 0u; e < 32u; e++) {
    let qe = qsh[pk * 32u + e];
    dt += qe * unpack(&w, e);
    xs += qe;
  }
  red[t] = s * dt + b * xs;
  workgroupBarrier();
  var sj = -MAXF;
  if (t < CK) {
    var acc = 0.0;
    for (var i = 0u; i < PACKS; i++) { acc += red[t * PACKS + i]; }
    if (k0 + t <= last) {
      sj = round_out(acc);
      scores[h * p.cap + k0 + t] = sj;
    }
  }
  // The chunk's max over its CK keys: runs of 8 into red[CK ..], then thread 0 over the runs (two barriers where a
  // tree took log2(CK); a max is exact in any order).
  workgroupBarrier();
  if (t < CK) { red[t] = sj; }
  workgroupBarrier();
  if (t < CK / 8u) {
    var m = red[8u * t];
    for (var i = 1u; i < 8u; i++) { m = max(m, red[8u * t + i]); }
    red[CK + t] = m;
  }
  workgroupBarrier();
  if (t == 0u) {
    var m = red[CK];
    for (var i = 1u; i < CK / 8u; i++) { m = max(m, red[CK + i]); }
    scores[cmax_at(h, c)] = m;
  }
}
