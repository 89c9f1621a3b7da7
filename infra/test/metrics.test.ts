/**
 * Metric names come from the code (infra/metrics.json, exported by `atelier-admin metrics`):
 * every alarm and dashboard widget on the Atelier namespace names a metric the code emits.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Match } from 'aws-cdk-lib/assertions';

import { EMITTED_METRICS, METRIC_NAMESPACE } from '../lib/metrics';
import { resourcesOfType, synth } from './helpers';

describe('metric names', () => {
  const s = synth('dev');

  it('every alarm on the Atelier namespace watches a metric the code emits', () => {
    const alarms = resourcesOfType(s.json, 'AWS::CloudWatch::Alarm');
    const ours = alarms.filter(([, a]) => a.Properties?.Namespace === METRIC_NAMESPACE);
    assert.ok(ours.length >= 5, `only ${ours.length} alarms on ${METRIC_NAMESPACE}`);
    for (const [name, alarm] of ours) {
      const metric = alarm.Properties?.MetricName as string;
      assert.ok(EMITTED_METRICS.has(metric), `${name} watches ${metric}, which the code never emits`);
    }
  });

  it('every dashboard widget on the Atelier namespace shows a metric the code emits', () => {
    const [, board] = resourcesOfType(s.json, 'AWS::CloudWatch::Dashboard')[0]!;
    const body = JSON.stringify(board.Properties?.DashboardBody);
    const searched = [...body.matchAll(/MetricName=\\\\"(\w+)\\\\"/g)].map((m) => m[1]!);
    const listed = [...body.matchAll(/\[\\"Atelier\\",\\"(\w+)\\"/g)].map((m) => m[1]!);
    assert.ok(searched.length + listed.length >= 10, body.slice(0, 400));
    for (const metric of [...searched, ...listed]) {
      assert.ok(EMITTED_METRICS.has(metric), `the dashboard shows ${metric}, which the code never emits`);
    }
  });

  it('pages when Stripe signatures start failing and when the sweeper stops running', () => {
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRIC_NAMESPACE,
      MetricName: 'PaymentEvents',
      Dimensions: Match.arrayWith([{ Name: 'Outcome', Value: 'signature_invalid' }]),
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Invocations',
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
  });
});
