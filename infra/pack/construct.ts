/**
 * Builds the `AtelierService` construct into an npm package (JavaScript, `.d.ts`, the code's
 * exported catalogues it reads at synth, the placeholder asset) and packs it with `npm pack`:
 *
 *   npm run pack:construct [-- OUT_DIR]     (default: ../target/cdk-construct)
 *
 * prints the tarball's path. test/package.test.ts installs that tarball into a separate CDK app
 * and synthesizes it, so the package works outside this repository.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const PACKAGE_NAME = '@atelier/cdk';
const INFRA = resolve(__dirname, '..');
/** What lib/ reads beside itself (`join(__dirname, '..', file)`). */
const CATALOGUES = ['schema.json', 'env-names.json', 'models.json', 'metrics.json', 'cors.json'];
/** What lib/ reads from the Terraform module's folder: the data grants both read. */
const FROM_MODULE = ['terraform/data-grants.json'];

interface InfraPackage {
  readonly version: string;
  readonly license: string;
  readonly dependencies: Readonly<Record<string, string>>;
}

/** Builds and packs the construct into `outDir`; returns the tarball's path. */
export function packConstruct(outDir: string): string {
  const stage = join(outDir, 'package');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  const tsc = require.resolve('typescript/bin/tsc', { paths: [INFRA] });
  execFileSync(process.execPath, [tsc, '-p', join(INFRA, 'tsconfig.build.json'), '--outDir', stage], { stdio: 'inherit' });
  for (const file of [...CATALOGUES, ...FROM_MODULE]) cpSync(join(INFRA, file), join(stage, file));
  cpSync(join(INFRA, 'assets', 'placeholder'), join(stage, 'assets', 'placeholder'), { recursive: true });
  const infra = JSON.parse(readFileSync(join(INFRA, 'package.json'), 'utf8')) as InfraPackage;
  const manifest = {
    name: PACKAGE_NAME,
    version: infra.version,
    description: 'Atelier on AWS as one CDK construct: AtelierService (paid AI image edits: three Lambda functions, DynamoDB, SQS, S3, a JWT-authorised HTTP API, alarms)',
    license: infra.license,
    main: 'lib/index.js',
    types: 'lib/index.d.ts',
    files: ['lib/**/*.js', 'lib/**/*.d.ts', ...CATALOGUES, ...FROM_MODULE, 'assets/'],
    peerDependencies: {
      'aws-cdk-lib': `^${infra.dependencies['aws-cdk-lib']}`,
      constructs: `^${infra.dependencies['constructs']}`,
    },
  };
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const printed = execFileSync('npm', ['pack', '--silent', '--pack-destination', outDir], { cwd: stage, encoding: 'utf8' });
  const tarball = printed.trim().split('\n').pop() ?? '';
  return join(outDir, tarball);
}

if (require.main === module) {
  const out = resolve(process.argv[2] ?? join(INFRA, '..', 'target', 'cdk-construct'));
  mkdirSync(out, { recursive: true });
  console.log(packConstruct(out));
}
