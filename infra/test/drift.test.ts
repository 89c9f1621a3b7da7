/**
 * The drift guard: the tables and indexes of the synthesized template against the code's
 * schema module (`atelier-admin schema`, passed in by `cargo xtask infra-test`), and proof that
 * the guard fails on a tampered template.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { type TableDef, loadSchema, tableDrift } from '../lib/schema';
import { type CfnTemplate, liveEnvNames, liveSchema, synth } from './helpers';
import { loadEnvNames } from '../lib/environment';

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

function tableResource(t: CfnTemplate, logical: string) {
  const found = Object.values(t.Resources).find(
    (r) => r.Type === 'AWS::DynamoDB::Table' && r.Metadata?.['atelier:table'] === logical,
  );
  if (!found) throw new Error(`no ${logical} table in the template`);
  return found;
}

describe('drift guard', () => {
  const { json } = synth('prod');
  const { schema, source } = liveSchema();

  it(`finds the template's tables and indexes equal to the code's schema (${source})`, () => {
    assert.deepEqual(tableDrift(json, schema), []);
  });

  it('agrees with the committed copy the stack is built from', () => {
    assert.deepEqual(loadSchema(), schema, 'infra/schema.json is stale: run cargo xtask infra-schema');
    assert.deepEqual(loadEnvNames(), liveEnvNames().names, 'infra/env-names.json is stale: run cargo xtask infra-schema');
  });

  it('fails on a template whose index was renamed', () => {
    const tampered = clone(json);
    const jobs = tableResource(tampered, 'jobs');
    const gsi = jobs.Properties!.GlobalSecondaryIndexes.find((g: any) => g.IndexName === 'by_sweep');
    gsi.IndexName = 'by_sweep_v2';
    assert.deepEqual(tableDrift(tampered, schema), [
      'table jobs: index by_sweep is missing from the template',
      'table jobs: index by_sweep_v2 is in the template but not in the code',
    ]);
  });

  it('fails on a changed key type, a lost projection, a TTL and a missing table', () => {
    const tampered = clone(json);
    const ledger = tableResource(tampered, 'ledger');
    ledger.Properties!.AttributeDefinitions.find((a: any) => a.AttributeName === 'ref').AttributeType = 'N';
    ledger.Properties!.GlobalSecondaryIndexes[0].Projection = { ProjectionType: 'KEYS_ONLY' };
    tableResource(tampered, 'accounts').Properties!.TimeToLiveSpecification = { AttributeName: 'expires', Enabled: true };
    for (const [k, r] of Object.entries(tampered.Resources)) {
      if (r.Metadata?.['atelier:table'] === 'budget') delete tampered.Resources[k];
    }
    const drift = tableDrift(tampered, schema);
    assert.ok(drift.some((d) => d.startsWith('table ledger: keys are user_id:S + ref:N')), drift.join('\n'));
    assert.ok(drift.some((d) => d.includes('index by_time') && d.includes('(KEYS_ONLY)')), drift.join('\n'));
    assert.ok(drift.includes('table accounts: TTL attribute is expires, the code says null'), drift.join('\n'));
    assert.ok(drift.includes("table budget is in the code's schema but not in the template"), drift.join('\n'));
  });

  it('fails when the code gains a table the infrastructure has not picked up', () => {
    const newer: TableDef[] = [
      ...clone(schema),
      {
        logical: 'receipts',
        env: 'ATELIER_RECEIPTS_TABLE',
        partition_key: { name: 'user_id', type: 'S' },
        sort_key: null,
        indexes: [],
        ttl_attribute: 'expires_at',
      },
    ];
    assert.deepEqual(tableDrift(json, newer), ["table receipts is in the code's schema but not in the template"]);
  });
});
