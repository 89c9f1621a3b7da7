/**
 * The CDK app. Context (all optional, `--context key=value`):
 *
 * - `atelier:stage`            dev | prod (prod: deletion protection, retained data, longer logs)
 * - `atelier:arch`             x86_64 | arm64 (must match `cargo xtask package --arch`)
 * - `atelier:distDir`          folder of `<function>/bootstrap.zip` (default ../target/lambda-dist/<arch>)
 * - `atelier:placeholderCode`  true: synthesize without the zips (tests, offline checks; never deploy)
 * - `atelier:stackName`        default Atelier-<stage>
 * - `atelier:perIpRateLimit`   requests per client IP per 5 minutes: adds CloudFront + a WAF rate rule
 *                              in front of the API (us-east-1 only; default: none)
 *
 * cdk-nag's AwsSolutions pack runs on every synth: an unacknowledged finding fails it.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';

import { type Arch, AtelierStack, type Stage } from '../lib/atelier-stack';

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
  perIpRateLimit: ctx('perIpRateLimit') === undefined ? undefined : Number(ctx('perIpRateLimit')),
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
