// safetensors: 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, then the
// data. The header is validated before any tensor is read, as the reference `safetensors` crate does (known
// dtypes, shape x dtype = byte length, tensors contiguous in offset order and covering the data exactly), and each
// tensor aligned for its dtype; so a corrupt, truncated or hand-edited file is an error naming the file and the
// tensor, never overlapping or shifted weights.
import { FormatError } from '../errors.ts';
import type { ByteSource, Progress } from './sources.ts';

export type StDType =
  'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U64' | 'U32' | 'U16' | 'U8' | 'BOOL';
export const ST_BYTES: Record<StDType, number> = {
  F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2, U8: 1, BOOL: 1,
};

export interface TensorEntry {
  name: string;
  dtype: StDType;
  shape: number[];
  /** Absolute byte range in the file. */
  start: number;
  end: number;
  /** Which file holds it (for sharded checkpoints). */
  source: ByteSource;
}

const MAX_HEADER = 100 << 20;

/** One safetensors file: its validated header and lazy tensor reads. */
export class SafetensorsFile {
  private constructor(readonly source: ByteSource, readonly entries: Map<string, TensorEntry>,
    readonly metadata: Record<string, string>) {}

  static async open(source: ByteSource): Promise<SafetensorsFile> {
    const size = await source.size();
    const name = source.name;
    if (size < 8) throw new FormatError('safetensors', `${name}: ${size} bytes is too short for a safetensors header`);
    const lenBytes = await source.read(0, 8);
    const n = Number(new DataView(lenBytes.buffer, lenBytes.byteOffset, 8).getBigUint64(0, true));
    if (n <= 0 || n > MAX_HEADER || 8 + n > size) {
      throw new FormatError('safetensors',
        `${name}: header length ${n} does not fit the file (${size} bytes); not a safetensors file, or truncated`);
    }
    let header: Record<string, unknown>;
    try {
      header = JSON.parse(new TextDecoder().decode(await source.read(8, 8 + n)));
    } catch (e) {
      throw new FormatError('safetensors', `${name}: header is not valid JSON (${(e as Error).message})`);
    }
    if (typeof header !== 'object' || header === null || Array.isArray(header)) throw new FormatError('safetensors',
      `${name}: header is not a JSON object`);
    const base = 8 + n;
    const entries = new Map<string, TensorEntry>();
    let metadata: Record<string, string> = {};
    for (const [key, raw] of Object.entries(header)) {
      if (key === '__metadata__') {
        // MLX writes null when there is none.
        if (raw !== null && (typeof raw !== 'object' || !Object.values(raw).every((v) => typeof v === 'string'))) {
          throw new FormatError('safetensors', `${name}: __metadata__ must map names to strings`);
        }
        metadata = (raw ?? {}) as Record<string, string>;
        continue;
      }
      entries.set(key, validateEntry(name, key, raw, base, size, source));
    }
    checkLayout(name, [...entries.values()], base, size);
    return new SafetensorsFile(source, entries, metadata);
  }

  get names(): string[] { return [...this.entries.keys()]; }

  entry(name: string): TensorEntry {
    const e = this.entries.get(name);
    if (!e) throw new FormatError('safetensors', `${this.source.name}: no tensor '${name}'`);
    return e;
  }

  /** Raw little-endian bytes of one tensor. */
  async bytes(name: string, onProgress?: Progress): Promise<Uint8Array> {
    return readEntry(this.entry(name), onProgress);
  }

  /** A tensor widened to f32 (floats) or as integers (int types), for tests and small tensors. */
  async array(name: string): Promise<Float32Array | Int32Array | Uint32Array> {
    return decode(this.entry(name), await this.bytes(name));
  }
}

export async function readEntry(e: TensorEntry, onProgress?: Progress): Promise<Uint8Array> {
  const b = await e.source.read(e.start, e.end, onProgress);
  if (b.byteLength !== e.end - e.start) throw new FormatError('safetensors',
    `${e.source.name}: tensor '${e.name}' truncated`);
  return b;
}

function validateEntry(file: string, key: string, raw: unknown, base: number, size: number,
  source: ByteSource): TensorEntry {
  const r = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
  const where = `${file}: tensor '${key}'`;
  if (typeof r !== 'object' || r === null) throw new FormatError('safetensors', `${where}: entry is not an object`);
  if (typeof r.dtype !== 'string' || !(r.dtype in ST_BYTES)) {
    throw new FormatError('safetensors',
      `${where}: unknown dtype ${JSON.stringify(r.dtype)} (known: ${Object.keys(ST_BYTES).join(', ')})`);
  }
  const shape = r.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) throw new FormatError('safetensors',
    `${where}: bad shape ${JSON.stringify(shape)}`);
  const off = r.data_offsets;
  if (!Array.isArray(off) || off.length !== 2 || !off.every((o) => Number.isInteger(o) && o >= 0) || off[1] < off[0]) {
    throw new FormatError('safetensors', `${where}: bad data_offsets ${JSON.stringify(off)}`);
  }
  const dtype = r.dtype as StDType;
  const want = shape.reduce((a: number, d: number) => a * d, 1) * ST_BYTES[dtype];
  if (off[1] - off[0] !== want) {
    throw new FormatError('safetensors',
      `${where}: ${dtype} [${shape.join(', ')}] needs ${want} bytes, offsets give ${off[1] - off[0]}`);
  }
  if (base + off[1] > size) {
    throw new FormatError('safetensors',
      `${where}: data ends at byte ${base + off[1]}, past the end of the file (${size} bytes); truncated?`);
  }
  return { name: key, dtype, shape, start: base + off[0], end: base + off[1], source };
}

/** Tensors in offset order must tile the data [base, size) exactly, each starting at a multiple of its element size. */
function checkLayout(file: string, entries: TensorEntry[], base: number, size: number): void {
  const sorted = entries.slice().sort((a, b) => a.start - b.start || a.end - b.end);
  let at = base;
  let prev: TensorEntry | null = null;
  const span = (e: TensorEntry) => `'${e.name}' (data bytes ${e.start - base}..${e.end - base})`;
  for (const e of sorted) {
    if (e.start < at) throw new FormatError('safetensors', `${file}: tensor ${span(e)} overlaps tensor ${span(prev!)}`);
    if (e.start > at) {
      throw new FormatError('safetensors',
        `${file}: data bytes ${at - base}..${e.start - base} before tensor ${span(e)} belong to no tensor; ` +
        'tensors must be contiguous');
    }
    if ((e.start - base) % ST_BYTES[e.dtype]) {
      throw new FormatError('safetensors',
        `${file}: tensor ${span(e)} is ${e.dtype} but starts at a data byte that is not a multiple of ` +
        `${ST_BYTES[e.dtype]}`);
    }
    at = e.end;
    prev = e;
  }
  if (at !== size) {
    throw new FormatError('safetensors',
      `${file}: ${size - at} bytes after the last tensor${prev ? ` ${span(prev)}` : ''} belong to no tensor; ` +
      'the data must end with the last tensor');
  }
}

/** Decode raw bytes to a typed array (floats widened to f32; 64-bit ints must fit in 32 bits). */
export function decode(e: TensorEntry, b: Uint8Array): Float32Array | Int32Array | Uint32Array {
  const buf = b.byteOffset % 8 === 0 ? b : b.slice();
  const n = e.shape.reduce((a, d) => a * d, 1);
  const ab = buf.buffer as ArrayBuffer;
  switch (e.dtype) {
    case 'F32': return new Float32Array(ab, buf.byteOffset, n).slice();
    case 'F64': return Float32Array.from(new Float64Array(ab, buf.byteOffset, n));
    case 'BF16': {
      const h = new Uint16Array(ab, buf.byteOffset, n);
      const out = new Uint32Array(n);
      for (let i = 0; i < n; i++) out[i] = h[i] << 16;
      return new Float32Array(out.buffer);
    }
    case 'F16': {
      const h = new Uint16Array(ab, buf.byteOffset, n);
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = halfToFloat(h[i]);
      return out;
    }
    case 'I32': return new Int32Array(ab, buf.byteOffset, n).slice();
    case 'U32': return new Uint32Array(ab, buf.byteOffset, n).slice();
    case 'I16': return Int32Array.from(new Int16Array(ab, buf.byteOffset, n));
    case 'U16': return Uint32Array.from(new Uint16Array(ab, buf.byteOffset, n));
    case 'I8': return Int32Array.from(new Int8Array(ab, buf.byteOffset, n));
    case 'U8': case 'BOOL': return Uint32Array.from(new Uint8Array(ab, buf.byteOffset, n));
    case 'I64': case 'U64': {
      const v = new BigInt64Array(ab, buf.byteOffset, n);
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        if (v[i] > 0x7fffffffn || v[i] < -0x80000000n) throw new FormatError('safetensors',
          `tensor '${e.name}': value ${v[i]} does not fit in 32 bits`);
        out[i] = Number(v[i]);
      }
      return out;
    }
  }
}

function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >>> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

export interface TensorToWrite { dtype: StDType; shape: number[]; data: ArrayBufferView }

/**
 * Serialise tensors to safetensors bytes (header padded to 8 bytes). Tensors go widest dtype first, then by
 * name, as the crate writes them, so every tensor is aligned for its dtype.
 */
export function encodeSafetensors(tensors: Record<string, TensorToWrite>, metadata?: Record<string,
  string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    if (!(t.dtype in ST_BYTES)) throw new FormatError('safetensors', `tensor '${name}': unknown dtype ${t.dtype}`);
  }
  const names = Object.keys(tensors).sort((a, b) => ST_BYTES[tensors[b].dtype] - ST_BYTES[tensors[a].dtype] ||
    (a < b ? -1 : a > b ? 1 : 0));
  for (const name of names) {
    const t = tensors[name];
    const want = t.shape.reduce((a, d) => a * d, 1) * ST_BYTES[t.dtype];
    if (t.data.byteLength !== want) throw new FormatError('safetensors',
      `tensor '${name}': ${t.dtype} [${t.shape}] needs ${want} bytes, data has ${t.data.byteLength}`);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + want] };
    offset += want;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  const pad = (8 - (json.byteLength % 8)) % 8;
  if (pad) json = new TextEncoder().encode(JSON.stringify(header) + ' '.repeat(pad));
  const out = new Uint8Array(8 + json.byteLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  out.set(json, 8);
  let o = 8 + json.byteLength;
  for (const name of names) {
    const d = tensors[name].data;
    out.set(new Uint8Array(d.buffer, d.byteOffset, d.byteLength), o);
    o += d.byteLength;
  }
  return out;
}

/**
 * A checkpoint made of one file or of shards listed in `model.safetensors.index.json` ({weight_map: {name: file}}).
 * `open(file)` returns a source for a file name next to the index.
 */
export class Checkpoint {
  private constructor(readonly entries: Map<string, TensorEntry>, readonly files: SafetensorsFile[]) {}

  static async fromFiles(files: SafetensorsFile[]): Promise<Checkpoint> {
    const entries = new Map<string, TensorEntry>();
    for (const f of files) {
      for (const [k, e] of f.entries) {
        if (entries.has(k)) throw new FormatError('checkpoint',
          `tensor '${k}' appears in both ${entries.get(k)!.source.name} and ${f.source.name}`);
        entries.set(k, e);
      }
    }
    return new Checkpoint(entries, files);
  }

  static async fromIndex(indexJson: string, indexName: string,
    open: (file: string) => ByteSource): Promise<Checkpoint> {
    let idx: { weight_map?: Record<string, string> };
    try { idx = JSON.parse(indexJson); } catch (e) { throw new FormatError('checkpoint',
      `${indexName}: not JSON (${(e as Error).message})`); }
    if (!idx.weight_map || typeof idx.weight_map !== 'object') throw new FormatError('checkpoint',
      `${indexName}: no weight_map`);
    const shardNames = [...new Set(Object.values(idx.weight_map))].sort();
    const files = await Promise.all(shardNames.map(async (s) => SafetensorsFile.open(open(s))));
    const ck = await Checkpoint.fromFiles(files);
    for (const [k, file] of Object.entries(idx.weight_map)) {
      const e = ck.entries.get(k);
      if (!e) throw new FormatError('checkpoint',
        `${indexName} lists '${k}' in ${file}, but that shard has no such tensor`);
      if (!e.source.name.endsWith(file)) throw new FormatError('checkpoint',
        `${indexName} puts '${k}' in ${file}, found in ${e.source.name}`);
    }
    return ck;
  }

  get names(): string[] { return [...this.entries.keys()]; }
  has(name: string): boolean { return this.entries.has(name); }
  entry(name: string): TensorEntry {
    const e = this.entries.get(name);
    if (!e) throw new FormatError('checkpoint', `missing tensor '${name}'`);
    return e;
  }
  /** Total bytes of all tensors. */
  get bytes(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.end - e.start;
    return n;
  }
}
