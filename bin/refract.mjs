#!/usr/bin/env node
// npx refract ...: runs the compiled CLI (npm ci builds dist/).
import '../dist/cli/refract.js';
