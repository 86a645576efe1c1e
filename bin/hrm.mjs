#!/usr/bin/env node
// npx hrm ...: runs the compiled CLI (npm ci builds dist/).
import '../dist/cli/hrm.js';
