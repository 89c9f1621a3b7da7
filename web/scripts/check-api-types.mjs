// Fails when src/api/schema.d.ts is not what openapi-typescript makes from the committed
// OpenAPI document (functions/api/openapi.json, which the API's drift test keeps equal to the
// served one). Fix: `npm run gen:api`.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const out = join(mkdtempSync(join(tmpdir(), 'atelier-api-')), 'schema.d.ts');
execFileSync('npx', ['openapi-typescript', '../functions/api/openapi.json', '-o', out], { stdio: 'ignore' });
if (readFileSync(out, 'utf8') !== readFileSync('src/api/schema.d.ts', 'utf8')) {
  console.error('web/src/api/schema.d.ts is stale: run `npm run gen:api` in web/');
  process.exit(1);
}
console.log('web/src/api/schema.d.ts matches functions/api/openapi.json');
