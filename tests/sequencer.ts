// Longest test files first, from tests/durations.json (written by scripts/test-durations.mjs), files it does not
// know before all. Vitest orders by its own cache of the last run, which a fresh clone (CI) lacks: it then keeps
// the folders' order, and a long file started last leaves one of the two workers idle for its whole run.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const durations = JSON.parse(readFileSync(new URL('./durations.json', import.meta.url),
  'utf8')) as Record<string, number>;

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = (f: TestSpecification) => durations[relative(f.project.config.root, f.moduleId)] ?? Infinity;
    return [...files].sort((a, b) => seconds(b) - seconds(a));
  }
}
