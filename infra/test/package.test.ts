/**
 * The construct others use: `npm run pack:construct` builds a package with `.d.ts` and no path
 * into this repository; a separate CDK app (its own folder, the package installed from the
 * tarball, its own TypeScript file type-checked against the package's declarations) gives the
 * code by props and typed packs/origins, and synthesizes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';

import { PACKAGE_NAME, packConstruct } from '../pack/construct';

const INFRA = resolve(__dirname, '..');

const APP = `
import { App, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AtelierService, type CreditPack } from '${PACKAGE_NAME}';

const app = new App({ outdir: process.argv[2] });
const stack = new Stack(app, 'Photos', { env: { account: '123456789012', region: 'eu-west-1' } });
const code = lambda.Code.fromAsset(process.argv[3]!);
const packs: CreditPack[] = [{ name: 'few', credits: 20, amount: 300, currency: 'eur' }];
new AtelierService(stack, 'Atelier', {
  stage: 'dev',
  site: false,
  code: { api: code, consumer: code, sweeper: code },
  creditPacks: packs,
  webOrigins: ['https://photos.example.com', 'https://m.example.com'],
  checkoutReturnUrls: ['https://photos.example.com/'],
});
app.synth();
`;

/** A folder with the package installed from `tarball` and the CDK libraries it peers with. */
function consumerApp(tarball: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'atelier-consumer-app-'));
  const modules = join(dir, 'node_modules');
  mkdirSync(join(modules, '@atelier'), { recursive: true });
  for (const peer of ['aws-cdk-lib', 'constructs', '@types']) {
    symlinkSync(join(INFRA, 'node_modules', peer), join(modules, peer));
  }
  const target = join(modules, ...PACKAGE_NAME.split('/'));
  mkdirSync(target);
  execFileSync('tar', ['-xzf', tarball, '-C', target, '--strip-components=1']);
  writeFileSync(join(dir, 'app.ts'), APP);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, module: 'commonjs', target: 'ES2022', esModuleInterop: true, skipLibCheck: true, types: ['node'], outDir: 'out' }, files: ['app.ts'] }),
  );
  return dir;
}

describe('the packed construct', () => {
  const out = mkdtempSync(join(tmpdir(), 'atelier-pack-'));
  const tarball = packConstruct(out);
  const app = consumerApp(tarball);

  it('ships declarations and reads nothing outside itself', () => {
    const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' });
    assert.match(listing, /package\/lib\/index\.d\.ts/);
    assert.match(listing, /package\/metrics\.json/);
    const service = readFileSync(join(app, 'node_modules', ...PACKAGE_NAME.split('/'), 'lib', 'atelier-service.js'), 'utf8');
    assert.doesNotMatch(service, /__dirname, '\.\.', '\.\.'/, 'the construct must not reach above its package');
  });

  it('synthesizes in a separate app with code from props and typed packs and origins', () => {
    const tsc = require.resolve('typescript/bin/tsc', { paths: [INFRA] });
    execFileSync(process.execPath, [tsc, '-p', join(app, 'tsconfig.json')], { cwd: app, stdio: 'inherit' });
    const cdkOut = join(app, 'cdk.out');
    const code = join(INFRA, 'assets', 'placeholder');
    execFileSync(process.execPath, [join(app, 'out', 'app.js'), cdkOut, code], { cwd: app, stdio: 'inherit' });
    const template = JSON.parse(readFileSync(join(cdkOut, 'Photos.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties?: Record<string, any> }>;
    };
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties?.Runtime === 'provided.al2023');
    assert.equal(functions.length, 3);
    const api = functions.find((f) => f.Properties?.Environment?.Variables?.ATELIER_CREDIT_PACKS !== undefined);
    assert.equal(api?.Properties?.Environment.Variables.ATELIER_CREDIT_PACKS, 'few:20:300:eur');
    assert.equal(api?.Properties?.Environment.Variables.ATELIER_CHECKOUT_RETURN_URLS, 'https://photos.example.com/');
    const httpApi = Object.values(template.Resources).find((r) => r.Type === 'AWS::ApiGatewayV2::Api');
    assert.deepEqual(httpApi?.Properties?.CorsConfiguration?.AllowOrigins, ['https://photos.example.com', 'https://m.example.com']);
  });
});
