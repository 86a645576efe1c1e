// The PyTorch anchors' file (bench/suites/torch-anchors.py's JSON line, written by bench/torch-anchors.sh for
// bench/h200.sh or bench/chrome/run.ts in the same call as the WebGPU figures), read by every runner.
import { readFileSync } from 'node:fs';

/**
 * The file's JSON; a file that cannot be read or parsed gives `{ error }`, so a failed anchor run costs no figures.
 * Also reads --peers' file (bench/peers/run.sh's peers.json), stored the same way under `peers`.
 */
export function readAnchors(path: string, flag = '--anchors'): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    return { error: `${flag} ${path}: ${(e as Error).message.split('\n')[0]}` };
  }
}
