// The part of markdown-it (no bundled types) that vite.config.ts uses to render README.md for the docs link.
declare module 'markdown-it' {
  export default class MarkdownIt {
    constructor(options?: { html?: boolean; linkify?: boolean });
    render(src: string): string;
  }
}
