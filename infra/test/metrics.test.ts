/**
 * Metric names come from the code (infra/metrics.json, exported by `atelier-admin metrics`):
 * every alarm and dashboard widget on the Atelier namespace names a metric the code emits.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Match } from 'aws-cdk-lib/assertions';

import { REVERSALS_ALARM_PER_HOUR } from '../lib/atelier-service';
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

  it('pages on a burst of purchase reversals, counted in an hour', () => {
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRIC_NAMESPACE,
      MetricName: 'PaymentEvents',
      Dimensions: Match.arrayWith([{ Name: 'Outcome', Value: 'reversed' }]),
      Period: 3600,
      Threshold: REVERSALS_ALARM_PER_HOUR,
    });
  });

  it('shows the money coming in: purchases against charges, revenue, reversals', () => {
    const body = JSON.stringify(resourcesOfType(s.json, 'AWS::CloudWatch::Dashboard')[0]![1].Properties!.DashboardBody);
    for (const metric of ['PurchasedCredits', 'ChargedCredits', 'PurchaseRevenue']) {
      assert.ok(body.includes(metric), `the dashboard does not show ${metric}`);
    }
    assert.ok(body.includes('reversed'), 'the dashboard does not show reversals');
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
