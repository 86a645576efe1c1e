// CONTRIBUTING.md describes the tree as it is: every WGSL include a kernel author may take, and every folder of src/
// (the layer table), so that the guide cannot drift from the code unnoticed.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const guide = readFileSync(new URL('CONTRIBUTING.md', root), 'utf8');

describe('CONTRIBUTING.md', () => {
  it('names every shared WGSL include', () => {
    const kernels = new URL('src/kernels/', root);
    const includes = readdirSync(kernels, { withFileTypes: true }).filter((d) => d.isDirectory())
      .flatMap((d) => readdirSync(new URL(`${d.name}/`, kernels)).filter((f) => f.endsWith('.inc.wgsl'))
        .map((f) => `${d.name}/${f}`));
    expect(includes.length).toBeGreaterThan(20);
    expect(includes.filter((f) => !guide.includes(`\`${f}\``))).toEqual([]);
  });

  it('places every folder of src/ in its layer table', () => {
    const folders = readdirSync(new URL('src/', root), { withFileTypes: true }).filter((d) => d.isDirectory());
    expect(folders.map((d) => d.name).filter((d) => !guide.includes(`\`src/${d}/\``))).toEqual([]);
  });
});
