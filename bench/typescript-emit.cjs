/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS require hook, loaded before any TypeScript can be */
'use strict';

/**
 * `node -r ./bench/typescript-emit.cjs file.ts`: loads .ts files through
 * TypeScript's own CommonJS emit (ts.transpileModule with tsconfig.json's
 * options), so a bench runs the code `npm run build` writes and `npm start`
 * runs. tsx's esbuild emit reads every imported binding through a getter
 * (two, for a module's own exports), which showed in the memory store's
 * profile as ~20 % of a decision: a cost of the bench's loader, not of the
 * service. Only syntax is transpiled; `npx tsc --noEmit` checks the types.
 */
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const ts = require('typescript');

const configPath = path.join(__dirname, '..', 'tsconfig.json');
const { config } = ts.readConfigFile(configPath, ts.sys.readFile);
const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, path.dirname(configPath));
const compilerOptions = { ...options, sourceMap: false, inlineSourceMap: false, noEmit: false };

// Registering the extension also makes require('./x') find x.ts, as tsc's output finds x.js.
Module._extensions['.ts'] = function compileTypeScript(module, filename) {
  const source = fs.readFileSync(filename, 'utf8');
  const { outputText } = ts.transpileModule(source, { compilerOptions, fileName: filename });
  module._compile(outputText, filename);
};
