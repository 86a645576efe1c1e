// One GPU context per test worker.
import { Gpu } from '../../src/gpu/gpu.ts';

let shared: Promise<Gpu> | null = null;

export function getGpu(): Promise<Gpu> {
  shared ??= Gpu.create();
  return shared;
}
