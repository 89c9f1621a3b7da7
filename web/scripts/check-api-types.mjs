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

// The web's copy of the text limits (src/TextLimit.tsx) against the document's maxLength.
const doc = JSON.parse(readFileSync('../functions/api/openapi.json', 'utf8'));
const source = readFileSync('src/TextLimit.tsx', 'utf8');
const copy = (name) => Number(new RegExp(`^\\s*${name}: (\\d+),`, 'm').exec(source)?.[1]);
const props = (schema) => doc.components.schemas[schema].properties;
for (const [name, max] of [
  ['description', props('EditRequest').target_description.maxLength],
  ['instruction', props('RepairRequest').instruction.maxLength],
]) {
  if (!Number.isInteger(max) || copy(name) !== max) {
    console.error(`src/TextLimit.tsx TEXT_LIMITS.${name} is ${String(copy(name))}; the API's maxLength is ${String(max)}`);
    process.exit(1);
  }
}
console.log('src/TextLimit.tsx limits match the API document');
