/**
 * The models a deployment names come from the code's catalogue (infra/models.json): a model
 * past its provider's shutdown, unknown, or of the wrong kind fails the synth (plain values)
 * or is not an allowed value of the ready-made stack's parameter; the lifecycle and outage
 * alarms watch the metric names the code exports.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';

import { AtelierService, type AtelierServiceProps } from '../lib/atelier-service';
import { loadModels, usableModels, utcToday } from '../lib/models';
import { type CfnTemplate, resourcesOfType, synth } from './helpers';

const CATALOGUE = loadModels();

function teamStack(props: Partial<AtelierServiceProps> = {}) {
  const app = new App();
  const stack = new Stack(app, 'TeamApp', { env: { account: '123456789012', region: 'eu-west-1' } });
  new AtelierService(stack, 'Photos', { stage: 'prod', placeholderCode: true, site: false, ...props });
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}

function envOf(json: CfnTemplate, name: string): Record<string, unknown>[] {
  return resourcesOfType(json, 'AWS::Lambda::Function')
    .map(([, r]) => r.Properties?.Environment?.Variables ?? {})
    .filter((v) => name in v);
}

describe('the models of a deployment', () => {
  it('sets the catalogue defaults on every function (the sweeper checks their lifecycle daily)', () => {
    const json = teamStack();
    const withModels = envOf(json, 'ATELIER_IMAGE_MODEL');
    assert.equal(withModels.length, 3);
    for (const env of withModels) {
      assert.equal(env.ATELIER_IMAGE_MODEL, CATALOGUE.defaults.image);
      assert.equal(env.ATELIER_VISION_MODEL, CATALOGUE.defaults.vision);
    }
  });

  const refused: [string, Partial<AtelierServiceProps>, RegExp][] = [
    ['an image model past its shutdown', { imageModel: 'gpt-image-1' }, /imageModel: gpt-image-1 was shut down by its provider on 2026-10-23/],
    [
      'a vision model on the day of its shutdown',
      { visionModel: 'gpt-4.1-mini', modelCheckDate: '2027-01-14' },
      /visionModel: gpt-4.1-mini was shut down by its provider on 2027-01-14/,
    ],
    ['an unknown model', { imageModel: 'gpt-image-9' }, /imageModel: gpt-image-9 is not in the model catalogue/],
    ['a vision model for the edit', { imageModel: 'gpt-5.4-mini' }, /imageModel: gpt-5.4-mini cannot serve the edit calls/],
  ];
  for (const [what, props, error] of refused) {
    it(`refuses ${what} at synth, naming the setting and the models to use`, () => {
      assert.throws(() => teamStack({ modelCheckDate: '2026-12-01', ...props }), error);
      assert.throws(() => teamStack({ modelCheckDate: '2026-12-01', ...props }), /use one of: gpt-image-2\.5|use one of: gpt-5\.4-mini/);
    });
  }

  it('takes a model the day before its shutdown', () => {
    const json = teamStack({ visionModel: 'gpt-4.1-mini', modelCheckDate: '2027-01-13' });
    assert.equal(envOf(json, 'ATELIER_VISION_MODEL')[0]?.ATELIER_VISION_MODEL, 'gpt-4.1-mini');
  });

  it('offers the ready-made stack only the models usable today, defaulting to the catalogue', () => {
    const params = synth('dev').json.Parameters ?? {};
    const today = utcToday();
    assert.deepEqual(params.ImageModel?.AllowedValues, usableModels(CATALOGUE, 'edit', today));
    assert.deepEqual(params.VisionModel?.AllowedValues, usableModels(CATALOGUE, 'vision', today));
    assert.equal(params.ImageModel?.Default, CATALOGUE.defaults.image);
    assert.ok(!params.ImageModel?.AllowedValues.includes('gpt-image-1'), 'gpt-image-1 is shut down');
  });

  it('alarms 30 days before a shutdown and on any "no such model" answer', () => {
    const alarms = resourcesOfType(teamStack(), 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties ?? {});
    const near = alarms.find((a) => a.MetricName === CATALOGUE.metrics.days_to_shutdown);
    assert.ok(near, 'a days-to-shutdown alarm');
    assert.equal(near.Threshold, CATALOGUE.shutdown_warning_days);
    assert.equal(near.ComparisonOperator, 'LessThanOrEqualToThreshold');
    assert.equal(near.Period, 86400);
    const outage = alarms.find((a) => a.MetricName === CATALOGUE.metrics.model_unavailable);
    assert.ok(outage, 'a model-unavailable alarm');
    assert.equal(outage.Threshold, 1);
    assert.equal(outage.Statistic, 'Sum');
  });

  it('alarms when any provider\'s circuit breaker opens, one alarm per provider', () => {
    const alarms = resourcesOfType(teamStack(), 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties ?? {});
    const breakers = alarms.filter((a) => a.MetricName === CATALOGUE.metrics.provider_breaker);
    const dims = (a: Record<string, any>, name: string) =>
      (a.Dimensions as { Name: string; Value: unknown }[]).find((d) => d.Name === name)?.Value;
    assert.deepEqual(breakers.map((a) => dims(a, 'Provider')).sort(), [...CATALOGUE.providers].sort());
    for (const a of breakers) {
      assert.equal(dims(a, 'Transition'), 'opened');
      assert.equal(a.Threshold, 1);
      assert.equal(a.Statistic, 'Sum');
      assert.equal(a.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    }
  });
});
