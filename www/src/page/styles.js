// The whole stylesheet of the gallery and lab pages, inlined in <head> (it is
// small, so there is no render-blocking request). Images keep their box from
// the width/height attributes (height:auto keeps the aspect ratio), so
// nothing moves when they arrive.
export const CSS = [
  ':root{color-scheme:light dark;font:16px/1.5 system-ui,sans-serif}',
  'body{margin:0 auto;max-width:1040px;padding:16px}',
  'h1{font-size:1.6rem;margin:.2em 0}',
  'img{display:block;max-width:100%;height:auto;background:#8884}',
  '.grid{display:grid;gap:16px;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));padding:0;list-style:none}',
  'figure{margin:0}figcaption{font-size:.85rem;opacity:.8}',
  'table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #8886;text-align:left}',
  'code{font-size:.9em}',
].join('');
