#!/usr/bin/env node
/** Entry point of `npm start`. */
import { runMain } from './run.js';

await runMain();
