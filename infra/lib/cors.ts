/**
 * The CORS rules of the API and the bucket from ONE definition: `shared/src/adapters/cors.rs`, exported
 * by `atelier-admin cors` and committed as `infra/cors.json` (`cargo xtask infra-schema`).
 * The allowed origins are the stack's `WebOrigins`, not part of it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CorsRules {
  readonly allow_methods: readonly string[];
  readonly allow_headers: readonly string[];
  readonly expose_headers: readonly string[];
  readonly max_age_secs: number;
}

export interface Cors {
  readonly api: CorsRules;
  readonly bucket: CorsRules;
}

export const CORS_PATH = join(__dirname, '..', 'cors.json');

export function loadCors(path: string = CORS_PATH): Cors {
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as Cors;
  for (const key of ['api', 'bucket'] as const) {
    const r = parsed[key];
    const lists = [r?.allow_methods, r?.allow_headers, r?.expose_headers];
    if (!lists.every((l) => Array.isArray(l) && l.every((v) => typeof v === 'string')) || !Number.isInteger(r.max_age_secs)) {
      throw new Error(`${path}: malformed ${key} rules`);
    }
  }
  return parsed;
}
