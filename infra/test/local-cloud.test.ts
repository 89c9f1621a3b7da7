/**
 * The parameters `cargo xtask cloud` deploys this same template with: the dev issuer and the
 * stand-in model on the loopback, the model base URL into the consumer's environment. Nothing
 * else may differ between the local cloud and a real deployment.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Match } from 'aws-cdk-lib/assertions';

import { URL_PATTERN } from '../lib/atelier-stack';
import { functionId, synth } from './helpers';

/** CloudFormation matches AllowedPattern against the whole value. */
const accepts = (pattern: string, value: string) => new RegExp(`^(?:${pattern})$`).test(value);

describe('local cloud parameters', () => {
  const s = synth('dev');
  const issuerPattern: string = s.json.Parameters?.JwtIssuer?.AllowedPattern;
  const modelPattern: string = s.json.Parameters?.ModelBaseUrl?.AllowedPattern;

  it('accept the dev issuer and the stand-in model on the loopback', () => {
    assert.ok(accepts(issuerPattern, 'http://127.0.0.1:8811/dev-issuer'));
    assert.ok(accepts(issuerPattern, 'http://localhost:8811/dev-issuer'));
    assert.ok(accepts(modelPattern, 'http://127.0.0.1:8810'));
  });

  it('accept https anywhere and an empty issuer (Cognito), as before', () => {
    assert.ok(accepts(issuerPattern, 'https://issuer.example.com/'));
    assert.ok(accepts(issuerPattern, ''));
    assert.ok(accepts(modelPattern, 'https://api.openai.com'));
    assert.ok(!accepts(modelPattern, ''), 'the model URL is never empty');
  });

  it('refuse plain http to any other host, and other schemes', () => {
    for (const p of [issuerPattern, modelPattern]) {
      for (const bad of [
        'http://issuer.example.com/',
        'http://10.0.0.5:8811/dev-issuer',
        'http://127.0.0.1.evil.example/',
        'http://localhost.evil.example/',
        'ftp://127.0.0.1/',
        'http://127.0.0.1:8811/ spaced',
      ]) {
        assert.ok(!accepts(p, bad), `${p} must refuse ${bad}`);
      }
    }
    assert.equal(modelPattern, URL_PATTERN);
    assert.equal(issuerPattern, `^$|${URL_PATTERN}`);
  });

  it('give the consumer the model base URL from its parameter, default OpenAI', () => {
    assert.equal(s.json.Parameters?.ModelBaseUrl?.Default, 'https://api.openai.com');
    const consumer = s.json.Resources[functionId(s, 'consumer')]!;
    assert.deepEqual(consumer.Properties?.Environment?.Variables?.ATELIER_MODEL_BASE_URL, { Ref: 'ModelBaseUrl' });
    s.template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          ATELIER_MODEL_BASE_URL: { Ref: 'ModelBaseUrl' },
          ATELIER_MODEL_API_KEY_SECRET_ID: Match.anyValue(),
        }),
      },
    });
  });
});
