/**
 * Assertion tests for the guards (infra/lib/ledger-guard.ts) and the dashboard: the ledger
 * stream and its filtered mapping to the sweeper, the daily audit rule's input, the IAM the
 * stream and the audit's continuation need, each new alarm's metric and threshold, and one
 * dashboard with the money, the pipeline and the budget.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { BUDGET_ALERT_PERCENTS } from '../lib/atelier-stack';
import { AUDIT_INPUT, DELIVERY_P95_MS, GUARD_METRICS, LEDGER_STREAM_BATCH } from '../lib/ledger-guard';
import { functionId, resourcesOfType, statementsOf, synth, tableId } from './helpers';

describe('the ledger tamper alarm', () => {
  const s = synth('dev');
  const ledger = s.json.Resources[tableId(s, 'ledger')]!.Properties!;
  const sweeper = functionId(s, 'sweeper');
  const mappings = resourcesOfType(s.json, 'AWS::Lambda::EventSourceMapping').map(([, r]) => r.Properties!);
  const streamMapping = mappings.find((m) => JSON.stringify(m.EventSourceArn).includes(`"${tableId(s, 'ledger')}","StreamArn"`));

  it('streams the ledger table’s keys and the webhooks table’s (the delivery fan-out), and no other table', () => {
    assert.deepEqual(ledger.StreamSpecification, { StreamViewType: 'KEYS_ONLY' });
    const streamed = resourcesOfType(s.json, 'AWS::DynamoDB::Table').filter(([, r]) => r.Properties?.StreamSpecification);
    assert.deepEqual(
      streamed.map(([id]) => id).sort(),
      [tableId(s, 'ledger'), tableId(s, 'webhooks')].sort(),
    );
    for (const [, r] of streamed) assert.deepEqual(r.Properties?.StreamSpecification, { StreamViewType: 'KEYS_ONLY' });
  });

  it('maps the stream to the sweeper, filtered to MODIFY and REMOVE, bisecting a failing batch', () => {
    assert.ok(streamMapping, 'a mapping from the ledger stream');
    assert.deepEqual(streamMapping.EventSourceArn, { 'Fn::GetAtt': [tableId(s, 'ledger'), 'StreamArn'] });
    assert.deepEqual(streamMapping.FunctionName, { Ref: sweeper });
    assert.deepEqual(streamMapping.FilterCriteria, {
      Filters: [{ Pattern: JSON.stringify({ eventName: ['MODIFY', 'REMOVE'] }) }],
    });
    assert.equal(streamMapping.BatchSize, LEDGER_STREAM_BATCH);
    assert.equal(streamMapping.BisectBatchOnFunctionError, true);
    assert.equal(streamMapping.StartingPosition, 'LATEST');
  });

  it('lets the sweeper read the stream and invoke itself (the audit’s continuation), nothing more', () => {
    const policies = resourcesOfType(s.json, 'AWS::IAM::Policy').filter(([logical]) => logical.startsWith('SweeperGuardPolicy'));
    assert.equal(policies.length, 1);
    const statements = policies[0]![1].Properties!.PolicyDocument.Statement as any[];
    const read = statements.find((st) => [st.Action].flat().includes('dynamodb:GetRecords'));
    assert.deepEqual(read?.Resource, { 'Fn::GetAtt': [tableId(s, 'ledger'), 'StreamArn'] });
    const invoke = statements.find((st) => [st.Action].flat().includes('lambda:InvokeFunction'));
    assert.deepEqual(invoke?.Resource, { 'Fn::GetAtt': [sweeper, 'Arn'] });
    const actions = statements.flatMap((st) => [st.Action].flat());
    assert.ok(!actions.some((a) => /UpdateItem|DeleteItem|PutItem/.test(a)), `${actions}`);
    assert.ok(statementsOf(s, 'sweeper').length > 0);
  });

  it('alarms at the first modified or removed row within a minute, telling on-call where the key is', () => {
    const alarms = resourcesOfType(s.json, 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties!);
    const ledger = alarms.filter((x) => x.MetricName === GUARD_METRICS.ledgerRowsChanged);
    assert.deepEqual(
      ledger.map((a) => (a.Dimensions as any[]).find((d) => d.Name === 'EventName').Value).sort(),
      ['MODIFY', 'REMOVE'],
    );
    for (const a of ledger) {
      assert.equal(a.Metrics, undefined, 'no metric math: the local cloud refuses it');
      assert.equal(a.Threshold, 1);
      assert.equal(a.EvaluationPeriods, 1);
      assert.equal(a.Period, 60);
      assert.equal(a.Statistic, 'Sum');
      assert.equal(a.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
      assert.match(String(a.AlarmDescription), /ledger_row_changed/);
    }
  });
});

describe('the daily audit', () => {
  const s = synth('dev');
  const sweeper = functionId(s, 'sweeper');
  const rules = resourcesOfType(s.json, 'AWS::Events::Rule').map(([, r]) => r.Properties!);

  it('runs once a day with the input the sweeper reads as the audit task', () => {
    const rule = rules.find((r) => (r.Targets as any[]).some((t) => t.Input));
    assert.ok(rule, 'a rule with an input');
    assert.match(String(rule.ScheduleExpression), /^cron\(\d+ \d+ \* \* \? \*\)$/);
    const target = (rule.Targets as any[])[0];
    assert.deepEqual(target.Arn, { 'Fn::GetAtt': [sweeper, 'Arn'] });
    assert.deepEqual(JSON.parse(target.Input), AUDIT_INPUT);
    assert.deepEqual(AUDIT_INPUT, { task: 'audit' });
  });

  it('alarms at the first offender', () => {
    const alarms = resourcesOfType(s.json, 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties!);
    const a = alarms.find((x) => x.MetricName === GUARD_METRICS.auditOffenders);
    assert.ok(a, 'AuditOffenders alarm');
    assert.deepEqual(a.Dimensions, [{ Name: 'FunctionName', Value: { Ref: sweeper } }]);
    assert.equal(a.Threshold, 1);
    assert.equal(a.Statistic, 'Sum');
    assert.match(String(a.AlarmDescription), /audit_offender/);
  });
});

describe('the metrics that had no alarm', () => {
  const s = synth('dev');
  const alarms = resourcesOfType(s.json, 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties!);

  it('alarms on the submit → delivered p95; refusals and key conflicts are argued non-alarms (infra/README.md)', () => {
    const a = alarms.find((x) => x.MetricName === GUARD_METRICS.deliveryTime);
    assert.ok(a, 'DeliveryTime alarm');
    assert.equal(a.ExtendedStatistic, 'p95');
    assert.equal(a.Threshold, DELIVERY_P95_MS);
    assert.deepEqual(a.Dimensions, [{ Name: 'FunctionName', Value: { Ref: functionId(s, 'consumer') } }]);
    assert.ok(!alarms.some((x) => x.MetricName === 'Refusals' || x.MetricName === 'IdempotencyConflicts'));
  });
});

describe('the dashboard', () => {
  const s = synth('dev');
  const boards = resourcesOfType(s.json, 'AWS::CloudWatch::Dashboard');

  it('is one screen with the money, the pipeline and the budget with its alert lines', () => {
    assert.equal(boards.length, 1);
    const body = JSON.stringify(boards[0]![1].Properties!.DashboardBody);
    for (const metric of [
      'RefundedCredits',
      'Refunds',
      'ModelCallCostMicros',
      'Refusals',
      'JobsFinished',
      'QueueWait',
      'DeliveryTime',
      'ApproximateAgeOfOldestMessage',
      'Errors',
      'BudgetUsedPercent',
      'BudgetReservedPercent',
      'LedgerRowsChanged',
      'AuditOffenders',
      'VerificationFailures',
    ]) {
      assert.ok(body.includes(metric), `${metric} on the dashboard`);
    }
    for (const pct of BUDGET_ALERT_PERCENTS) assert.ok(body.includes(`${pct}% alert`), `${pct}% line`);
    assert.ok(body.includes('p95') && body.includes('p50'));
  });

  // The body is a Fn::Join around the functions' names; a name becomes "FN" (inside a string).
  const widgets = (
    JSON.parse(
      (boards[0]![1].Properties!.DashboardBody['Fn::Join'][1] as unknown[])
        .map((part) => (typeof part === 'string' ? part : 'FN'))
        .join(''),
    ) as { widgets: { x: number; y: number; width: number; properties: { title: string; metrics: unknown[] } }[] }
  ).widgets;

  it('fills four rows of 24 columns: fifteen widgets, the budget one double width', () => {
    assert.equal(widgets.length, 15);
    const rows = new Map<number, number[]>();
    for (const w of widgets) rows.set(w.y, [...(rows.get(w.y) ?? []), w.width]);
    assert.deepEqual(
      [...rows.values()].map((widths) => widths.reduce((a, b) => a + b, 0)),
      [24, 24, 24, 24],
    );
  });

  it('shows verification failures split by source, as their alarms watch them', () => {
    const w = widgets.find((x) => x.properties.title === 'Verification failures, by source');
    assert.ok(w, 'a verification failures widget');
    assert.match(
      JSON.stringify(w.properties.metrics),
      /SEARCH\('\{Atelier,FunctionName,Source\} MetricName=\\"VerificationFailures\\"', 'Sum', 300\)/,
    );
  });
});
