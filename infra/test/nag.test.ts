/**
 * cdk-nag, AwsSolutions pack: zero findings that are not acknowledged, every acknowledgment
 * with its reason, and the list of acknowledgments reviewed here (a new one fails this test
 * until it is added below with a look at its reason).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { App, Stack, Validations } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';

import { synth } from './helpers';

/** Every acknowledged finding, by construct path (relative to the stack) and rule. */
const REVIEWED = [
  'AddressKey: AwsSolutions-SMG4',
  'Alarms: AwsSolutions-SNS2',
  'ApiRole: AwsSolutions-IAM5[Resource::<Assets9A31D427.Arn>/*]',
  'ApiRole: AwsSolutions-IAM5[Resource::<Assets9A31D427.Arn>/results/*]',
  'ApiRole: AwsSolutions-IAM5[Resource::<Assets9A31D427.Arn>/uploads/*]',
  'Assets: AwsSolutions-S1',
  'ConsumerRole: AwsSolutions-IAM5[Resource::<Assets9A31D427.Arn>/*]',
  'ConsumerRole: AwsSolutions-IAM5[Resource::<Assets9A31D427.Arn>/results/*]',
  'GeminiProviderKey: AwsSolutions-SMG4',
  'HttpApi/GET--healthz: AwsSolutions-APIG4',
  'HttpApi/GET--v1--openapi.json: AwsSolutions-APIG4',
  'HttpApi/GET--v1--packs: AwsSolutions-APIG4',
  'HttpApi/GET--v1--styles: AwsSolutions-APIG4',
  'HttpApi/POST--v1--webhooks--apple: AwsSolutions-APIG4',
  'HttpApi/POST--v1--webhooks--google: AwsSolutions-APIG4',
  'HttpApi/POST--v1--webhooks--stripe: AwsSolutions-APIG4',
  'JobsDeadLetterQueue: AwsSolutions-SQS3',
  'ModelProviderKey: AwsSolutions-SMG4',
  'PushKeys: AwsSolutions-SMG4',
  'GooglePlayKey: AwsSolutions-SMG4',
  'AppleApiKey: AwsSolutions-SMG4',
  'SigningKey: AwsSolutions-SMG4',
  'StripeKeys: AwsSolutions-SMG4',
  'SweeperGuardPolicy: AwsSolutions-IAM5[Resource::*]',
  'SweeperRole: AwsSolutions-IAM5[Resource::<Assets9A31D427.Arn>/results/*]',
  'SweeperRole: AwsSolutions-IAM5[Resource::<Assets9A31D427.Arn>/uploads/*]',
  'Users: AwsSolutions-COG2',
  'Users: AwsSolutions-COG3',
  'Users: AwsSolutions-COG8',
  'Web/Bucket: AwsSolutions-S1',
  'Web/Distribution: AwsSolutions-CFR1',
  'Web/Distribution: AwsSolutions-CFR2',
  'Web/Distribution: AwsSolutions-CFR3',
  'Web/Distribution: AwsSolutions-CFR4',
  'WebhookDeadLetterQueue: AwsSolutions-SQS3',
];

function acknowledgments(root: IConstruct, stack: Stack): { where: string; id: string; reason: string }[] {
  const out: { where: string; id: string; reason: string }[] = [];
  const visit = (c: IConstruct) => {
    for (const m of c.node.metadata) {
      if (m.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(m.data as Record<string, string>)) {
        // Relative to the stack, without the service's id `Default` (CDK leaves it out of
        // logical ids, so the paths read as they did when the stack held the resources).
        const where = c.node.path.slice(stack.node.path.length + 1).replace(/^Default\//, '');
        out.push({ where, id: id.replace(/^annotation::/i, ''), reason });
      }
    }
    c.node.children.forEach(visit);
  };
  visit(root);
  return out;
}

describe('cdk-nag AwsSolutions', () => {
  const webDist = mkdtempSync(join(tmpdir(), 'atelier-web-'));
  writeFileSync(join(webDist, 'index.html'), '<!doctype html>');
  for (const [stage, extra] of [
    ['dev', {}],
    ['prod', {}],
    ['prod', { perIpRateLimit: 1000 }],
    ['prod', { webDist }],
    ['dev', { site: false }],
  ] as const) {
    it(`finds nothing unacknowledged (${stage} ${JSON.stringify(extra)})`, () => {
      const { stack } = synth(stage, extra);
      const report = new AwsSolutionsChecks().validateScope(stack);
      const findings = report.violations.flatMap((v) =>
        v.violatingResources.map((r) => `${v.ruleName} at ${r.constructPath ?? r.resourceLogicalId}: ${v.description}`),
      );
      assert.deepEqual(findings, []);
    });
  }

  it('acknowledges only the reviewed findings, each with a reason', () => {
    const { stack } = synth('prod');
    const acks = acknowledgments(stack, stack);
    for (const a of acks) assert.ok(a.reason.trim().length >= 40, `${a.where} ${a.id}: reason too thin`);
    assert.deepEqual(acks.map((a) => `${a.where}: ${a.id}`).sort(), [...REVIEWED].sort());
  });

  it('acknowledges only the reviewed findings of the per-IP front, each with a reason', () => {
    const { stack } = synth('prod', { perIpRateLimit: 1000 });
    const acks = acknowledgments(stack, stack);
    for (const a of acks) assert.ok(a.reason.trim().length >= 40, `${a.where} ${a.id}: reason too thin`);
    const front = ['ApiFront: AwsSolutions-CFR1', 'ApiFront: AwsSolutions-CFR3', 'ApiFront: AwsSolutions-CFR4'];
    assert.deepEqual(acks.map((a) => `${a.where}: ${a.id}`).sort(), [...REVIEWED, ...front].sort());
  });

  it('is live: an unsafe bucket in the same app is reported', () => {
    const app = new App();
    const stack = new Stack(app, 'Unsafe');
    new s3.Bucket(stack, 'Open', { enforceSSL: false });
    const report = new AwsSolutionsChecks().validateScope(stack);
    const rules = report.violations.map((v) => v.ruleName);
    assert.ok(rules.some((r) => r.includes('S10')), `expected AwsSolutions-S10 (TLS only) in ${rules.join(', ')}`);
  });
});
