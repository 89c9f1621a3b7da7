/**
 * The CDK app. Context (all optional, `--context key=value`):
 *
 * - `atelier:stage`            dev | prod (prod: deletion protection, retained data, longer logs)
 * - `atelier:arch`             x86_64 | arm64 (must match `cargo xtask package --arch`)
 * - `atelier:distDir`          folder of `<function>/bootstrap.zip` (default ../target/lambda-dist/<arch>)
 * - `atelier:placeholderCode`  true: synthesize without the zips (tests, offline checks; never deploy)
 * - `atelier:stackName`        default Atelier-<stage>
 * - `atelier:perIpRateLimit`   requests per client IP per 5 minutes: adds CloudFront + a WAF rate rule
 *                              in front of the API (us-east-1 only); `off`: none. Default: prod
 *                              10000 (the production front door, docs/operations.md), dev none
 * - `atelier:site`             false: no web site (bucket + CloudFront); the local cloud sets it
 * - `atelier:webDist`          the built web app to upload (default ../web/dist when it holds
 *                              index.html; `none`: create the site empty)
 *
 * cdk-nag's AwsSolutions pack runs on every synth: an unacknowledged finding fails it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';

import { type Arch, AtelierStack, DEFAULTS, type Stage } from '../lib/atelier-stack';

const app = new App();
const ctx = (key: string): string | undefined => {
  const v: unknown = app.node.tryGetContext(`atelier:${key}`);
  return v === undefined || v === null ? undefined : String(v);
};
const stage = (ctx('stage') ?? 'dev') as Stage;
if (stage !== 'dev' && stage !== 'prod') throw new Error(`atelier:stage must be dev or prod, not ${stage}`);
const arch = (ctx('arch') ?? 'x86_64') as Arch;
if (arch !== 'x86_64' && arch !== 'arm64') throw new Error(`atelier:arch must be x86_64 or arm64, not ${arch}`);

new AtelierStack(app, ctx('stackName') ?? `Atelier-${stage}`, {
  stage,
  arch,
  distDir: ctx('distDir'),
  placeholderCode: ctx('placeholderCode') === 'true',
  perIpRateLimit: perIpRateLimit(),
  site: ctx('site') !== 'false',
  webDist: webDist(),
});

/** The web build to upload: the context's folder, else web/dist once `npm run build` made it. */
function webDist(): string | undefined {
  const given = ctx('webDist');
  if (given === 'none') return undefined;
  if (given !== undefined) return given;
  const built = join(__dirname, '..', '..', 'web', 'dist');
  return existsSync(join(built, 'index.html')) ? built : undefined;
}
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));

/** The per-IP front's limit: the context's number, none for `off`, prod's default otherwise. */
function perIpRateLimit(): number | undefined {
  const v = ctx('perIpRateLimit');
  if (v === 'off') return undefined;
  if (v !== undefined) return Number(v);
  return stage === 'prod' ? DEFAULTS.perIpRateLimitProd : undefined;
}
