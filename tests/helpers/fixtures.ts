// Paths of the fixtures copied into the repository (tests read nothing outside it).
import { SafetensorsFile } from '../../src/io/safetensors.ts';
import { fileSource } from '../../src/io/sources.ts';

export const FIXTURES = new URL('../fixtures/mlx/', import.meta.url).pathname;
export const BROWN = new URL('../../models/hrm-text-brown-6m/', import.meta.url).pathname;

const cache = new Map<string, Promise<SafetensorsFile>>();

/** Open a safetensors fixture by path relative to tests/fixtures/mlx/ (cached per worker). */
export function fixture(rel: string): Promise<SafetensorsFile> {
  let f = cache.get(rel);
  if (!f) cache.set(rel, (f = SafetensorsFile.open(fileSource(FIXTURES + rel))));
  return f;
}
