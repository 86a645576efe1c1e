// Kernels: WGSL compiled once per (file, entry, overrides) into a pipeline cache; bind-group layouts and the
// uniform struct layout are read from the WGSL itself (wgsl_reflect), so a wrong binding name, a missing
// uniform or a too-large tensor is an error at the call, not garbage on the GPU.
// The package's "main" is a CommonJS file marked as ESM; its module build is the one every runtime can load.
import { WgslReflect } from 'wgsl_reflect/wgsl_reflect.module.js';
import { SHADERS } from './shaders.gen.ts';
import { BindingSizeError, HrmError, ShapeError } from '../errors.ts';
import { bufferId, type BufferView, type Gpu } from '../gpu/gpu.ts';
import { Tensor } from '../tensor/tensor.ts';
import { specialize } from './specialize.ts';
import { unrollConstantLoops } from './unroll.ts';
import { runtimeText, shaderText, type ShaderText } from './shader-text.ts';
import { overrideKey, reflectable, unknownKeys } from './reflect.ts';

export { overrideKey } from './reflect.ts';

type Access = 'uniform' | 'read-only-storage' | 'storage';
interface Binding { name: string; binding: number; access: Access }
interface UniformField { name: string; offset: number; type: 'u32' | 'i32' | 'f32' }
export type Overrides = Record<string, number>;
/** A step down Kernel's pipeline lookup: override name, then value, then the next override (or the pipeline). */
interface OverrideNode { next: Map<string, Map<number, OverrideNode>>; pipeline?: GPUComputePipeline }

/** Bind groups kept per pipeline before the cache starts over. */
const BIND_GROUP_CACHE = 4096;

export type Bindable = Tensor | BufferView;

export interface DispatchArgs {
  bindings: Record<string, Bindable>;
  uniforms?: Record<string, number>;
  overrides?: Overrides;
  workgroups: number | [number, number?, number?];
  /** Shown in GPU errors and timings; defaults to the kernel name. */
  label?: string;
}

/** Every Kernel made so far, in creation order (wrappers make theirs at module load). */
const registry: Kernel[] = [];

/** The kernels the loaded modules made: the list a sweep of every pipeline variant starts from. */
export function allKernels(): readonly Kernel[] {
  return registry;
}

/** One WGSL entry point with its reflected interface. */
export class Kernel {
  readonly source: string;
  readonly bindings: Binding[];
  readonly uniformSize: number = 0;
  readonly uniformFields: UniformField[] = [];
  readonly overrideNames: string[];
  private readonly layouts =
    new WeakMap<GPUDevice, { pipelineLayout: GPUPipelineLayout; bindGroupLayout: GPUBindGroupLayout }>();
  private readonly bindGroups = new WeakMap<GPUComputePipeline, Map<string, GPUBindGroup>>();
  /**
   * Shader modules per device: one under '' (overrides as pipeline constants), or one per override key
   * (specialize.ts).
   */
  private readonly modules = new WeakMap<GPUDevice, Map<string, GPUShaderModule>>();
  private readonly pipelines = new WeakMap<GPUDevice, { byKey: Map<string,
    GPUComputePipeline>; byOrder: OverrideNode }>();

  /**
   * `file` is the path under src/kernels/ (e.g. 'rmsnorm/rmsnorm.wgsl'), or under the folder of `shaders` (a
   * generated table of another folder: testkit/'s kernels, which the package does not ship); `entry` the @compute
   * function.
   */
  constructor(readonly file: string, readonly entry: string, readonly name = entry,
    shaders: Readonly<Record<string, string>> = SHADERS) {
    const src = shaders[file];
    if (src === undefined) throw new HrmError(name,
      `no shader file ${file} (known: ${Object.keys(shaders).join(', ')})`);
    this.source = src;
    const reflect = new WgslReflect(reflectable(src));
    const fn = reflect.entry.compute.find((f) => f.name === entry);
    if (!fn) throw new HrmError(name, `${file} has no @compute entry point '${entry}'`);
    this.bindings = fn.resources.map((r) => {
      if (r.group !== 0) throw new HrmError(name,
        `binding '${r.name}' is in group ${r.group}; kernels use group 0 only`);
      const access: Access = r.resourceType === 0 /* ResourceType.Uniform */ ? 'uniform'
        : r.access === 'read' ? 'read-only-storage' : 'storage';
      if (access === 'uniform') {
        const members = r.members ?? [];
        (this as { uniformSize: number }).uniformSize = r.size;
        for (const m of members) {
          const t = m.type.name;
          if (t !== 'u32' && t !== 'i32' && t !== 'f32') throw new HrmError(name,
            `uniform field '${m.name}' has type ${t}; use u32, i32 or f32`);
          this.uniformFields.push({ name: m.name, offset: m.offset, type: t });
        }
      }
      return { name: r.name, binding: r.binding, access };
    }).sort((a, b) => a.binding - b.binding);
    this.overrideNames = reflect.overrides.map((o) => o.name);
    registry.push(this);
  }

  /** Record one dispatch into the gpu's open batch. */
  dispatch(gpu: Gpu, args: DispatchArgs): void {
    const label = args.label ?? this.name;
    const pipeline = this.pipeline(gpu, args.overrides ?? {}, label);
    const entries: GPUBindGroupEntry[] = [];
    let bound = 0;
    for (const b of this.bindings) {
      if (b.access === 'uniform') {
        entries.push({ binding: b.binding, resource: gpu.uniform(this.packUniforms(args.uniforms ?? {}, label)) });
        continue;
      }
      const v = args.bindings[b.name];
      if (!v) throw new ShapeError(label,
        `missing binding '${b.name}' (kernel binds: ${this.storageNames().join(', ')})`);
      bound++;
      const view = v instanceof Tensor ? v.binding(label) : v;
      if (view.size > gpu.maxBinding) {
        throw new BindingSizeError(label,
          `binding '${b.name}' is ${view.size} bytes; this adapter binds at most ${gpu.maxBinding}`);
      }
      entries.push({ binding: b.binding, resource: { buffer: view.buffer, offset: view.offset, size: view.size } });
    }
    // Every binding the kernel declares was found above; any other name given is a mistake.
    const extra = unknownKeys(args.bindings, bound, (n) => this.bindings.some((b) => b.name === n));
    if (extra.length) throw new ShapeError(label,
      `unknown binding(s) ${extra.join(', ')} (kernel binds: ${this.storageNames().join(', ')})`);
    const wg = typeof args.workgroups === 'number' ? [args.workgroups, 1, 1] : [args.workgroups[0],
      args.workgroups[1] ?? 1, args.workgroups[2] ?? 1];
    const maxWg = gpu.device.limits.maxComputeWorkgroupsPerDimension;
    if (wg.some((w) => !Number.isInteger(w) || w < 0 || w > maxWg)) {
      throw new ShapeError(label, `workgroup count [${wg.join(', ')}] outside 0..${maxWg}`);
    }
    if (wg[0] * wg[1] * wg[2] === 0) return;
    const [bindGroup, key] = this.bindGroup(gpu.device, pipeline, entries, label);
    gpu.dispatch({ pipeline, bindGroup, key, workgroups: wg as [number, number, number], label });
  }

  /**
   * Bind groups are cached by the exact buffers, offsets and sizes they bind: a decode step re-binds the same pooled
   * buffers and uniform slots every token, and creating a bind group costs more than the rest of a dispatch's
   * recording. A destroyed buffer never matches again (new buffers get new ids).
   */
  private bindGroup(device: GPUDevice, pipeline: GPUComputePipeline, entries: GPUBindGroupEntry[],
    label: string): [GPUBindGroup, string] {
    let cache = this.bindGroups.get(pipeline);
    if (!cache) this.bindGroups.set(pipeline, (cache = new Map()));
    let key = '';
    for (const e of entries) {
      const r = e.resource as GPUBufferBinding;
      key += `${bufferId(r.buffer)}:${r.offset}:${r.size},`;
    }
    let bg = cache.get(key);
    if (!bg) {
      if (cache.size >= BIND_GROUP_CACHE) cache.clear();
      bg = device.createBindGroup({ layout: this.layout(device).bindGroupLayout, entries, label });
      cache.set(key, bg);
    }
    return [bg, key];
  }

  private storageNames(): string[] {
    return this.bindings.filter((b) => b.access !== 'uniform').map((b) => b.name);
  }

  private packUniforms(values: Record<string, number>, label: string): Uint8Array {
    const bytes = new Uint8Array(Math.max(16, this.uniformSize));
    const view = new DataView(bytes.buffer);
    for (const f of this.uniformFields) {
      const v = values[f.name];
      if (v === undefined) throw new ShapeError(label, `missing uniform '${f.name}'`);
      if (f.type === 'f32') view.setFloat32(f.offset, v, true);
      else {
        const ok = Number.isInteger(v) &&
          (f.type === 'u32' ? v >= 0 && v <= 0xffffffff : v >= -0x80000000 && v <= 0x7fffffff);
        if (!ok) throw new ShapeError(label, `uniform '${f.name}' = ${v} is not a valid ${f.type}`);
        if (f.type === 'u32') view.setUint32(f.offset, v, true); else view.setInt32(f.offset, v, true);
      }
    }
    const extra = unknownKeys(values, this.uniformFields.length, (n) => this.uniformFields.some((f) => f.name === n));
    if (extra.length) throw new ShapeError(label, `unknown uniform(s) ${extra.join(', ')}`);
    return bytes;
  }

  private pipeline(gpu: Gpu, overrides: Overrides, label: string): GPUComputePipeline {
    const device = gpu.device;
    let cache = this.pipelines.get(device);
    if (!cache) this.pipelines.set(device, (cache = { byKey: new Map(), byOrder: { next: new Map() } }));
    // Looked up first by the overrides as given, name by name and value by value down a tree of maps (this runs
    // every dispatch: no sorting, no strings built), then by their sorted key, under which a pipeline is made once
    // whatever order its callers list the overrides in.
    let node = cache.byOrder;
    for (const k in overrides) {
      let byValue = node.next.get(k);
      if (!byValue) node.next.set(k, (byValue = new Map()));
      let child = byValue.get(overrides[k]);
      if (!child) byValue.set(overrides[k], (child = { next: new Map() }));
      node = child;
    }
    if (node.pipeline) return node.pipeline;
    const key = overrideKey(overrides);
    let p = cache.byKey.get(key);
    if (p) return (node.pipeline = p);
    for (const k of Object.keys(overrides)) {
      if (!this.overrideNames.includes(k)) throw new ShapeError(label,
        `unknown override '${k}' (declared: ${this.overrideNames.join(', ') || 'none'})`);
    }
    // In an error scope of its own: a shader or override WebGPU rejects is reported at this op, not as the batch's.
    device.pushErrorScope('validation');
    p = device.createComputePipeline(this.pipelineDescriptor(device, overrides, label, shaderText(gpu)));
    gpu.checkLater(`${label}: pipeline ${this.file}:${this.entry}${key ? ` {${key}}` : ''}`, device.popErrorScope());
    cache.byKey.set(key, p);
    return (node.pipeline = p);
  }

  /**
   * The WGSL of the module these overrides use: the source itself, or where the runtime specializes (specialize.ts)
   * the source with their values written in and, with `unroll` (a GPU, not a CPU driver, whose compiler takes the
   * unrolled text quickly), its constant-trip loops written out (unroll.ts: naga's loops keep indexed arrays in local
   * memory).
   */
  moduleCode(overrides: Overrides, label = this.name, text: ShaderText = runtimeText()): string {
    if (!text.specialize) return this.source;
    const code = specialize(this.source, overrides, label);
    return text.unroll ? unrollConstantLoops(code) : code;
  }

  /**
   * The pipeline of these overrides: one module of the source for all of them, or where the runtime's translator
   * cannot take overrides (specialize.ts), one module per value set with the values written in (and its loops unrolled
   * with `unroll`: moduleCode). Public for the
   * variant sweep (tests/runtimes/variants.ts), which creates each pipeline the way dispatch does.
   */
  pipelineDescriptor(device: GPUDevice, overrides: Overrides, label = this.name,
    text: ShaderText = runtimeText()): GPUComputePipelineDescriptor {
    const key = overrideKey(overrides);
    const special = text.specialize;
    const moduleKey = special ? `${text.unroll ? 'unrolled ' : ''}${key}` : '';
    let modules = this.modules.get(device);
    if (!modules) this.modules.set(device, (modules = new Map()));
    let module = modules.get(moduleKey);
    if (!module) {
      const moduleLabel = `${this.file}${special && key ? `{${key}}` : ''}`;
      modules.set(moduleKey,
        (module = device.createShaderModule({ code: this.moduleCode(overrides, label, text), label: moduleLabel })));
    }
    return {
      label: `${this.name}${key ? `{${key}}` : ''}`,
      layout: this.layout(device).pipelineLayout,
      compute: { module, entryPoint: this.entry, constants: special ? {} : overrides },
    };
  }

  private layout(device: GPUDevice): { pipelineLayout: GPUPipelineLayout; bindGroupLayout: GPUBindGroupLayout } {
    let l = this.layouts.get(device);
    if (l) return l;
    const bgl = device.createBindGroupLayout({
      label: this.name,
      entries: this.bindings.map((b) => ({
        binding: b.binding, visibility: GPUShaderStage.COMPUTE,
        buffer: { type: b.access === 'uniform' ? 'uniform' : b.access },
      })),
    });
    l = { pipelineLayout: device.createPipelineLayout({ bindGroupLayouts: [bgl], label: this.name }),
      bindGroupLayout: bgl };
    this.layouts.set(device, l);
    return l;
  }
}

/** `n` rounded up to a multiple of `to`, at least one `to` (the padded size of a dimension tiled by `to`). */
export function padTo(n: number, to: number): number {
  return Math.max(to, Math.ceil(n / to) * to);
}

/** Workgroup grid covering `n` threads of `wg` each, folded into 2-D past the per-dimension limit. */
export function grid(gpu: Gpu, n: number, wg: number): [number, number] {
  const groups = Math.ceil(n / wg);
  const max = gpu.device.limits.maxComputeWorkgroupsPerDimension;
  if (groups <= max) return [groups, 1];
  const y = Math.ceil(groups / max);
  return [Math.ceil(groups / y), y];
}
