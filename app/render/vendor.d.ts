// highlight.js's browser ES module (npm @highlightjs/cdn-assets, mapped to "highlight.js" by
// index.html's import map) ships no types: the part the renderer uses.
declare module "highlight.js" {
  const hljs: {
    highlight(code: string, options: { language: string, ignoreIllegals?: boolean }): { value: string };
    getLanguage(name: string): object | undefined;
  };
  export default hljs;
}
