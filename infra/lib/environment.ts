/**
 * The functions' environment, from ONE list: the variables the code reads
 * (`atelier-admin env-names`, committed as `infra/env-names.json`).
 *
 * The stack offers a value for every variable it knows how to fill; the function environment
 * is exactly the listed names that have a value. A REQUIRED name without a value fails the
 * synth with the name, so a variable added to `shared/src/config/env.rs` cannot reach AWS unset.
 * Names Lambda fills itself (from the function's logging configuration) are not set by us.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface EnvName {
  readonly name: string;
  readonly required: boolean;
  readonly description: string;
}

export const ENV_NAMES_PATH = join(__dirname, '..', 'env-names.json');

/** Set by Lambda from `LoggingConfig` (JSON format, application log level): never by us. */
export const PLATFORM_PROVIDED: ReadonlySet<string> = new Set(['AWS_LAMBDA_LOG_FORMAT', 'AWS_LAMBDA_LOG_LEVEL']);

export function loadEnvNames(path: string = ENV_NAMES_PATH): EnvName[] {
  const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
  if (!Array.isArray(parsed)) throw new Error(`${path}: expected a JSON array`);
  const seen = new Set<string>();
  for (const e of parsed as EnvName[]) {
    if (typeof e.name !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(e.name) || typeof e.required !== 'boolean') {
      throw new Error(`${path}: malformed entry ${JSON.stringify(e)}`);
    }
    if (seen.has(e.name)) throw new Error(`${path}: ${e.name} twice`);
    seen.add(e.name);
  }
  return parsed as EnvName[];
}

/**
 * Values the stack can supply, by variable name. Each is a thunk, so a value that needs a
 * CloudFormation parameter creates that parameter only when the code actually reads it.
 */
export type EnvValues = Readonly<Record<string, () => string>>;

/** The function environment: listed names with a value; throws for required names without. */
export function functionEnvironment(names: readonly EnvName[], values: EnvValues): Record<string, string> {
  const env: Record<string, string> = {};
  const missing: string[] = [];
  for (const n of names) {
    if (PLATFORM_PROVIDED.has(n.name)) continue;
    const value = values[n.name];
    if (value) env[n.name] = value();
    else if (n.required) missing.push(`${n.name} (${n.description})`);
  }
  if (missing.length > 0) {
    throw new Error(
      `the code requires environment variables the infrastructure does not set: ${missing.join('; ')}. ` +
        'Give each a value in envValues() of infra/lib/atelier-service.ts (and in infra/terraform/lambda.tf).',
    );
  }
  return env;
}
