// Paths of the fixtures copied into the repository (tests read nothing outside it).
import { SafetensorsFile } from '../../src/io/safetensors.ts';
import { fileSource } from '../../src/io/sources.ts';
import { EMBEDDED_MODEL } from '../../src/hrm/files.ts';

export const FIXTURES = new URL('../../tests/fixtures/mlx/', import.meta.url).pathname;
/** The embedded model's folder: what the CLI, the library and the demo load when no model is named. */
export const EMBEDDED = new URL(`../../models/${EMBEDDED_MODEL}/`, import.meta.url).pathname;
/**
 * hrm-text-brown-6m (the embedded model until 2026-12-05), the model MLX's whole-model references were made on
 * (reference.*, tokenizer-reference.json).
 */
export const BROWN = new URL('../../tests/fixtures/hrm-text-brown-6m/', import.meta.url).pathname;

const cache = new Map<string, Promise<SafetensorsFile>>();

/** Open a safetensors fixture by path relative to tests/fixtures/mlx/ (cached per worker). */
export function fixture(rel: string): Promise<SafetensorsFile> {
  let f = cache.get(rel);
  if (!f) cache.set(rel, (f = SafetensorsFile.open(fileSource(FIXTURES + rel))));
  return f;
}
