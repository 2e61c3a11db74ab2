#!/usr/bin/env node
// Builds the package firelimit into packages/firelimit/dist: src/library (and the src/shared files it
// imports) compiled to CommonJS with declarations, plus the license and changelog beside package.json.
// Run by the package's prepack, so `npm pack ./packages/firelimit` always ships fresh code.
import { cpSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = path.join(root, 'packages/firelimit');
rmSync(path.join(pkg, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.lib.json')], { stdio: 'inherit', cwd: root });
for (const file of ['LICENSE', 'CHANGELOG.md']) cpSync(path.join(root, file), path.join(pkg, file));
