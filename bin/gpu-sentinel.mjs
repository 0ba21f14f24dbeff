#!/usr/bin/env node
// Launcher for the TypeScript CLI (bin/gpu-sentinel.ts): registers tsx's loader, resolved from this
// package's own node_modules, so `npx gpu-sentinel` works from any directory after `npm ci`.
import { register } from 'tsx/esm/api';

register();
await import('./gpu-sentinel.ts');
