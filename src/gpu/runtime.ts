// Which runtime this code runs in (a browser, Deno, Node) and its versions: what device.ts opens the GPU by, and
// what results and reports record.

/** Where this code runs: a browser page (or worker), Deno, or Node (WebGPU through Dawn, npm `webgpu`). */
export type Runtime = 'browser' | 'deno' | 'node' | 'unknown';

/** The runtime this code runs in (Deno first: it also has Node's `process`). */
export function runtimeName(): Runtime {
  const g = globalThis as { Deno?: unknown; process?: { versions?: { node?: string } }; window?: unknown };
  if (g.Deno) return 'deno';
  if (g.window !== undefined || typeof (globalThis as { importScripts?: unknown }).importScripts === 'function') {
    return 'browser';
  }
  if (g.process?.versions?.node) return 'node';
  return 'unknown';
}

/** This runtime's versions: Deno's or Node's own and its V8, the OS platform (Node), or the browser's user agent. */
export interface RuntimeInfo { runtime: Runtime; version: string; v8?: string; platform?: string; userAgent?: string }

export function runtimeInfo(): RuntimeInfo {
  const g = globalThis as {
    Deno?: { version: { deno: string; v8: string } };
    process?: { versions: { node: string; v8: string }; platform: string };
    navigator?: { userAgent?: string };
  };
  const runtime = runtimeName();
  if (runtime === 'deno') return { runtime, version: g.Deno!.version.deno, v8: g.Deno!.version.v8 };
  if (runtime === 'node') return { runtime, version: g.process!.versions.node, v8: g.process!.versions.v8,
    platform: g.process!.platform };
  return { runtime, version: 'unknown', userAgent: g.navigator?.userAgent ?? 'unknown' };
}
