import { createHash } from 'node:crypto';

/**
 * The page's only stylesheet, inlined so the page is one request and works
 * without JavaScript. Mobile first: the body never scrolls sideways; wide
 * things (code, tables) scroll inside their own box instead.
 */
export const DEVELOPERS_CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bg: #ffffff; --panel: #f4f6f8;
  --line: #d0d7de; --accent: #0b5cad; --warn-bg: #fff8e1; --warn-line: #e0b400; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117; --panel: #161b22; --line: #30363d;
    --accent: #58a6ff; --warn-bg: #2b2411; --warn-line: #9e7c00; }
}
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--fg); overflow-wrap: break-word;
  font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; }
main { max-width: 46rem; margin: 0 auto; padding: 1rem 1rem 3rem; }
header { margin-bottom: 1rem; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: .5rem 0; }
h2 { font-size: 1.25rem; margin: 2rem 0 .5rem; padding-top: .5rem; border-top: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin: 1.25rem 0 .25rem; }
p, ul, ol { margin: .5rem 0 .9rem; }
li { margin: .25rem 0; }
a { color: var(--accent); }
.lede { color: var(--muted); margin: 0; }
nav ul { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .25rem .9rem; font-size: .95rem; }
.summary { display: grid; grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr)); gap: .75rem; margin: 1rem 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: .5rem; padding: .75rem 1rem; }
.card .big { display: block; font-size: 1.7rem; font-weight: 700; line-height: 1.2; }
.card .label { color: var(--muted); font-size: .9rem; }
.note { background: var(--warn-bg); border-left: 4px solid var(--warn-line); padding: .6rem .9rem; border-radius: .25rem; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: .9em; }
:not(pre) > code { background: var(--panel); border: 1px solid var(--line); border-radius: .25rem; padding: 0 .25em; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: .5rem; padding: .75rem 1rem;
  overflow-x: auto; overflow-wrap: normal; white-space: pre; max-width: 100%; line-height: 1.45; }
.table-wrap { overflow-x: auto; max-width: 100%; margin: .5rem 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .95rem; }
th, td { text-align: left; vertical-align: top; border-bottom: 1px solid var(--line); padding: .4rem .6rem .4rem 0; }
th { font-weight: 600; }
caption { text-align: left; padding-bottom: .25rem; }
td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
.headers { margin: .5rem 0 1rem; }
.header-item { border-bottom: 1px solid var(--line); padding: .5rem 0; }
.header-item dt { font-weight: 600; }
.header-item dd { margin: .2rem 0 0; }
.example { color: var(--muted); font-size: .92rem; }
footer { color: var(--muted); font-size: .9rem; margin-top: 2.5rem; }
`;

/** For the Content-Security-Policy: the one inline stylesheet is allowed by hash, nothing else runs. */
export const DEVELOPERS_CSS_HASH = `sha256-${createHash('sha256').update(DEVELOPERS_CSS).digest('base64')}`;
