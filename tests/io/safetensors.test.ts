import { describe, expect, it } from 'vitest';
import { Checkpoint, SafetensorsFile, encodeSafetensors } from '../../src/io/safetensors.ts';
import { bytesSource, fileSource, urlSource } from '../../src/io/sources.ts';
import { FormatError } from '../../src/errors.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { packHalf } from '../../src/tensor/dtype.ts';
import { fixture } from '../../testkit/helpers/fixtures.ts';
import { getGpu } from '../helpers/gpu.ts';

const sample = () => encodeSafetensors({
  a: { dtype: 'F32', shape: [2, 3], data: new Float32Array([1, 2, 3, 4, 5, 6]) },
  b: { dtype: 'BF16', shape: [3], data: packHalf('bf16', [1.5, -2, 0.25]).subarray(0, 3) },
  c: { dtype: 'I32', shape: [2], data: new Int32Array([-1, 7]) },
  d: { dtype: 'F16', shape: [1], data: packHalf('f16', [0.5]).subarray(0, 1) },
}, { format: 'pt' });

describe('safetensors', () => {
  it('round-trips every dtype through the writer and the reader', async () => {
    const f = await SafetensorsFile.open(bytesSource('mem', sample()));
    expect(f.names.sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(f.metadata).toEqual({ format: 'pt' });
    expect([...await f.array('a')]).toEqual([1, 2, 3, 4, 5, 6]);
    expect([...await f.array('b')]).toEqual([1.5, -2, 0.25]);
    expect([...await f.array('c')]).toEqual([-1, 7]);
    expect([...await f.array('d')]).toEqual([0.5]);
    expect(f.entry('a').shape).toEqual([2, 3]);
  });

  it('uploads a bf16 tensor from its raw bytes to the GPU unchanged', async () => {
    const gpu = await getGpu();
    const f = await SafetensorsFile.open(bytesSource('mem', sample()));
    const t = Tensor.from(gpu, await f.bytes('b'), [3], 'bf16', 'b');
    expect([...await t.read()]).toEqual([1.5, -2, 0.25]);
  });

  it('reads the MLX ops fixture', async () => {
    const f = await fixture('ops.safetensors');
    const e = f.entry('matmul.f32.a');
    expect(e.shape).toEqual([7, 320]);
    const a = await f.array('matmul.f32.a');
    expect(a.length).toBe(7 * 320);
    expect(a.every(Number.isFinite)).toBe(true);
  });

  it('rejects a bad header, a truncated file, a wrong length and an unknown dtype, naming the file and tensor',
    async () => {
    const good = sample();
    await expect(SafetensorsFile.open(bytesSource('short.st',
      good.subarray(0, 5)))).rejects.toThrow(/short\.st.*too short/);
    const badLen = good.slice(); new DataView(badLen.buffer).setBigUint64(0, 1n << 40n, true);
    await expect(SafetensorsFile.open(bytesSource('len.st', badLen))).rejects.toThrow(/len\.st: header length/);
    await expect(SafetensorsFile.open(bytesSource('cut.st',
      good.subarray(0, good.byteLength - 4)))).rejects.toThrow(/cut\.st: tensor '.*past the end.*truncated/);
    const mk = (h: object) => {
      const j = new TextEncoder().encode(JSON.stringify(h));
      const out = new Uint8Array(8 + j.byteLength + 16);
      new DataView(out.buffer).setBigUint64(0, BigInt(j.byteLength), true);
      out.set(j, 8);
      return out;
    };
    await expect(SafetensorsFile.open(bytesSource('x.st',
      mk({ w: { dtype: 'Q4', shape: [1],
      data_offsets: [0, 1] } })))).rejects.toThrow(/x\.st: tensor 'w': unknown dtype "Q4"/);
    await expect(SafetensorsFile.open(bytesSource('x.st',
      mk({ w: { dtype: 'F32', shape: [3],
      data_offsets: [0, 8] } })))).rejects.toThrow(/'w': F32 \[3\] needs 12 bytes, offsets give 8/);
    const notJson = good.slice(); notJson[8] = 0x7b; notJson[9] = 0x7b;
    await expect(SafetensorsFile.open(bytesSource('j.st', notJson))).rejects.toThrow(FormatError);
  });

  it('refuses overlapping, gapped, trailing and misaligned tensors as the safetensors crate does, naming file and '
    + 'tensor', async () => {
    const mk = (h: object, data: number) => {
      const j = new TextEncoder().encode(JSON.stringify(h));
      const out = new Uint8Array(8 + j.byteLength + data);
      new DataView(out.buffer).setBigUint64(0, BigInt(j.byteLength), true);
      out.set(j, 8);
      return SafetensorsFile.open(bytesSource('w.safetensors', out));
    };
    const t = (dtype: string, n: number,
      at: number) => ({ dtype, shape: [n], data_offsets: [at, at + n * (dtype === 'F32' ? 4 : 1)] });
    await expect(mk({ a: t('F32', 3, 0), b: t('F32', 2, 8) }, 16)).rejects.toThrow(
      /^\[safetensors\] w\.safetensors: tensor 'b' \(data bytes 8\.\.16\) overlaps tensor 'a' \(data bytes 0\.\.12\)$/);
    await expect(mk({ a: t('F32', 2, 0), b: t('F32', 2, 12) }, 20)).rejects.toThrow(new RegExp('w\\.safetensors: data '
      + 'bytes 8\\.\\.12 before tensor \'b\' \\(data bytes 12\\.\\.20\\) belong to no tensor; '
      + 'tensors must be contiguous'));
    await expect(mk({ a: t('F32', 2, 4) }, 12)).rejects.toThrow(/data bytes 0\.\.4 before tensor 'a'/);
    await expect(mk({ a: t('F32', 2, 0) }, 12)).rejects
      .toThrow(/w\.safetensors: 4 bytes after the last tensor 'a' \(data bytes 0\.\.8\) belong to no tensor/);
    await expect(mk({ a: t('U8', 3, 0), b: t('F32', 1, 3) }, 7)).rejects.toThrow(
      /w\.safetensors: tensor 'b' \(data bytes 3\.\.7\) is F32 but starts at a data byte that is not a multiple of 4/);
    // In offset order, not key order; an empty tensor may sit anywhere.
    const ok = await mk({ z: t('F32', 1, 0), e: t('F32', 0, 4), a: t('U8', 3, 4) }, 7);
    expect(ok.names.sort()).toEqual(['a', 'e', 'z']);
  });

  it('writes mixed dtypes widest first so that every tensor is aligned', async () => {
    const bytes = encodeSafetensors({ a: { dtype: 'U8', shape: [3], data: new Uint8Array([1, 2, 3]) },
      b: { dtype: 'F64', shape: [1], data: new Float64Array([0.5]) },
      c: { dtype: 'F16', shape: [1], data: packHalf('f16', [2]).subarray(0, 1) } });
    const f = await SafetensorsFile.open(bytesSource('mem', bytes));
    expect(['b', 'c', 'a'].map((n) => f.entry(n).start - f.entry('b').start)).toEqual([0, 8, 10]);
    expect([...await f.array('a'), ...await f.array('b'), ...await f.array('c')]).toEqual([1, 2, 3, 0.5, 2]);
  });

  it('reads a file path in pieces and reports a missing file by name', async () => {
    const f = await SafetensorsFile.open(fileSource(new URL('../fixtures/mlx/hrm-tiny-a/model.safetensors',
      import.meta.url).pathname));
    expect(f.entry('model.embed_tokens.weight').dtype).toBe('BF16');
    await expect(SafetensorsFile.open(fileSource('/nonexistent/model.safetensors'))).rejects
      .toThrow(/\/nonexistent\/model\.safetensors/);
  });

  it('reads over HTTP with range requests or one streamed download, with progress', async () => {
    const bytes = sample();
    for (const ranges of [true, false]) {
      const fake: typeof fetch = async (_u, init) => {
        const range = (init?.headers as Record<string, string> | undefined)?.Range;
        if (init?.method === 'HEAD') return new Response(null,
          { headers: { 'content-length': String(bytes.byteLength) } });
        if (ranges && range) {
          const [s, e] = range.slice(6).split('-').map(Number);
          return new Response(bytes.slice(s, e + 1), { status: 206 });
        }
        return new Response(bytes.slice(), { headers: { 'content-length': String(bytes.byteLength) } });
      };
      const seen: number[] = [];
      const src = urlSource('http://example.test/model.safetensors', { fetch: fake });
      const f = await SafetensorsFile.open(src);
      expect([...await f.array('a')]).toEqual([1, 2, 3, 4, 5, 6]);
      await f.bytes('c', (l) => seen.push(l));
      expect(seen.length).toBeGreaterThan(0);
    }
  });

  it('assembles a sharded checkpoint from its index and names a bad index entry', async () => {
    const s1 = encodeSafetensors({ x: { dtype: 'F32', shape: [1], data: new Float32Array([1]) } });
    const s2 = encodeSafetensors({ y: { dtype: 'F32', shape: [1], data: new Float32Array([2]) } });
    const files: Record<string, Uint8Array> = { 'model-00001-of-00002.safetensors': s1,
      'model-00002-of-00002.safetensors': s2 };
    const open = (n: string) => bytesSource(n, files[n]);
    const idx = { weight_map: { x: 'model-00001-of-00002.safetensors', y: 'model-00002-of-00002.safetensors' } };
    const ck = await Checkpoint.fromIndex(JSON.stringify(idx), 'index.json', open);
    expect(ck.names.sort()).toEqual(['x', 'y']);
    const bad = { weight_map: { x: 'model-00001-of-00002.safetensors', z: 'model-00002-of-00002.safetensors' } };
    await expect(Checkpoint.fromIndex(JSON.stringify(bad), 'index.json', open)).rejects.toThrow(/lists 'z'/);
  });
});
