// Python's textwrap.wrap (default options: break on whitespace and after hyphens, long words broken, whitespace
// dropped at line ends), so the text report's Diagnosis block wraps exactly as REFRACT's does.

const WS = '[\\t\\n\\x0b\\x0c\\r ]';
const NWS = '[^\\t\\n\\x0b\\x0c\\r ]';
const LT = '[^\\d\\W]'; // a letter (ASCII \w here; Python's is Unicode)
const WP = '[\\w!"\'&.,?]';
// textwrap.TextWrapper.wordsep_re, verbatim in structure.
const WORDSEP = new RegExp(
  `(${WS}+|(?<=${WP})-{2,}(?=\\w)|` +
  `${NWS}+?(?:-(?:(?<=${LT}{2}-)|(?<=${LT}-${LT}-))(?=${LT}-?${LT})|(?=${WS}|$)|(?<=${WP})(?=-{2,}\\w)))`,
);

/** Wrap `text` to lines of at most `width` characters (indents included). */
export function wrap(text: string, width: number, initialIndent = '', subsequentIndent = ''): string[] {
  const chunks = text
    .replace(/\t/g, '        ')
    .replace(/[\t\n\x0b\x0c\r]/g, ' ')
    .split(WORDSEP)
    .filter((c) => c !== undefined && c !== '');
  chunks.reverse();
  const lines: string[] = [];
  while (chunks.length) {
    const cur: string[] = [];
    let curLen = 0;
    const indent = lines.length ? subsequentIndent : initialIndent;
    const w = width - indent.length;
    if (chunks[chunks.length - 1].trim() === '' && lines.length) chunks.pop();
    while (chunks.length) {
      const l = chunks[chunks.length - 1].length;
      if (curLen + l > w) break;
      cur.push(chunks.pop()!);
      curLen += l;
    }
    if (chunks.length && chunks[chunks.length - 1].length > w) {
      // _handle_long_word: break the word, preferably after a hyphen.
      const spaceLeft = w < 1 ? 1 : w - curLen;
      const chunk = chunks[chunks.length - 1];
      let end = spaceLeft;
      const hyphen = spaceLeft > 0 ? chunk.lastIndexOf('-', spaceLeft - 1) : -1;
      if (hyphen > 0 && /[^-]/.test(chunk.slice(0, hyphen))) end = hyphen + 1;
      cur.push(chunk.slice(0, end));
      chunks[chunks.length - 1] = chunk.slice(end);
    }
    if (cur.length && cur[cur.length - 1].trim() === '') cur.pop();
    if (cur.length) lines.push(indent + cur.join(''));
  }
  return lines;
}
