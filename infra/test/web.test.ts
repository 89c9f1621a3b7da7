/**
 * The web app's site (private bucket, CloudFront with Origin Access Control, security headers)
 * and the CORS that lets it call the API and the storage.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { App } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';

import { AtelierStack, DEV_WEB_ORIGIN } from '../lib/atelier-stack';
import { loadCors } from '../lib/cors';
import { HASHED_CACHE_CONTROL, HTML_CACHE_CONTROL } from '../lib/web-site';
import { liveCors, resourcesOfType, synth } from './helpers';

const id = (s: ReturnType<typeof synth>, c: { node: { defaultChild?: unknown } }) =>
  s.stack.getLogicalId(c.node.defaultChild as any);

/** A stand-in for `npm run build`'s output. */
function fakeBuild(): string {
  const dist = mkdtempSync(join(tmpdir(), 'atelier-web-'));
  mkdirSync(join(dist, 'assets'));
  writeFileSync(join(dist, 'index.html'), '<!doctype html><script type="module" src="/assets/index-abc123.js"></script>');
  writeFileSync(join(dist, 'assets', 'index-abc123.js'), 'console.log(1)');
  return dist;
}

describe('web site', () => {
  const s = synth('prod');
  const site = s.stack.site!;
  const dist = s.json.Resources[id(s, site.distribution)]!.Properties!.DistributionConfig;

  it('keeps the build in a private, encrypted bucket without website hosting', () => {
    const bucket = s.json.Resources[id(s, site.bucket)]!.Properties!;
    assert.deepEqual(bucket.PublicAccessBlockConfiguration, {
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    assert.equal(bucket.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault.SSEAlgorithm, 'AES256');
    assert.equal(bucket.WebsiteConfiguration, undefined);
    assert.equal(s.json.Resources[id(s, site.bucket)]!.DeletionPolicy, 'Retain');
  });

  it('lets only the distribution read it, through Origin Access Control', () => {
    s.template.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
    assert.ok(dist.Origins[0].OriginAccessControlId, 'the origin uses OAC');
    assert.equal(dist.Origins[0].S3OriginConfig.OriginAccessIdentity, '');
    const policies = resourcesOfType(s.json, 'AWS::S3::BucketPolicy').filter(
      ([, p]) => p.Properties!.Bucket.Ref === id(s, site.bucket),
    );
    const statements = policies.flatMap(([, p]) => p.Properties!.PolicyDocument.Statement as any[]);
    const reads = statements.filter((st) => st.Effect === 'Allow');
    assert.equal(reads.length, 1);
    assert.deepEqual(reads[0].Principal, { Service: 'cloudfront.amazonaws.com' });
    assert.equal(reads[0].Action, 's3:GetObject');
    assert.ok(JSON.stringify(reads[0].Condition).includes('AWS:SourceArn'), 'only this distribution');
    assert.ok(statements.some((st) => st.Effect === 'Deny' && JSON.stringify(st.Condition).includes('aws:SecureTransport')));
  });

  it('serves index.html at the root and for every unknown path (the app routes itself)', () => {
    assert.equal(dist.DefaultRootObject, 'index.html');
    assert.deepEqual(
      dist.CustomErrorResponses.map((r: any) => [r.ErrorCode, r.ResponseCode, r.ResponsePagePath, r.ErrorCachingMinTTL]),
      [
        [403, 200, '/index.html', 0],
        [404, 200, '/index.html', 0],
      ],
    );
  });

  it('serves HTTPS only, with the security headers on every response', () => {
    const behaviors = [dist.DefaultCacheBehavior, ...dist.CacheBehaviors];
    assert.deepEqual(behaviors.map((b: any) => b.PathPattern ?? '*'), ['*', 'assets/*']);
    for (const b of behaviors) {
      assert.equal(b.ViewerProtocolPolicy, 'redirect-to-https');
      assert.ok(b.ResponseHeadersPolicyId, `${b.PathPattern ?? '*'} has the headers policy`);
    }
    const [[, policy]] = resourcesOfType(s.json, 'AWS::CloudFront::ResponseHeadersPolicy') as any;
    const h = policy.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    assert.equal(h.StrictTransportSecurity.AccessControlMaxAgeSec, 31_536_000);
    assert.equal(h.StrictTransportSecurity.IncludeSubdomains, true);
    assert.equal(h.StrictTransportSecurity.Preload, true);
    assert.equal(h.ContentTypeOptions.Override, true);
    assert.equal(h.FrameOptions.FrameOption, 'DENY');
    assert.equal(h.ReferrerPolicy.ReferrerPolicy, 'strict-origin-when-cross-origin');
    const csp = JSON.stringify(h.ContentSecurityPolicy.ContentSecurityPolicy);
    for (const part of ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'", 'connect-src']) {
      assert.ok(csp.includes(part), `CSP has ${part}: ${csp}`);
    }
    assert.ok(csp.includes('.execute-api.'), 'CSP lets the app call the API');
    assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'), csp);
  });

  it('caches hashed assets for a year and revalidates index.html (set at upload)', () => {
    const withBuild = synth('prod', { webDist: fakeBuild() });
    const deployments = resourcesOfType(withBuild.json, 'Custom::CDKBucketDeployment').map(([, r]) => r.Properties!);
    assert.equal(deployments.length, 2);
    const hashed = deployments.find((d) => JSON.stringify(d.Include) === '["assets/*"]')!;
    const html = deployments.find((d) => JSON.stringify(d.Exclude) === '["assets/*"]')!;
    assert.deepEqual(hashed.SystemMetadata, { 'cache-control': HASHED_CACHE_CONTROL });
    assert.deepEqual(html.SystemMetadata, { 'cache-control': HTML_CACHE_CONTROL });
    assert.deepEqual(html.DistributionPaths, ['/*'], 'a deploy invalidates the cached index.html');
    assert.equal(hashed.Prune, false, 'old hashed files stay for pages still open');
  });

  it('synthesizes without a build, and refuses a folder that is not one', () => {
    s.template.resourceCountIs('Custom::CDKBucketDeployment', 0);
    assert.throws(
      () => new AtelierStack(new App(), 'NoBuild', { stage: 'dev', placeholderCode: true, webDist: tmpdir() + '/nope' }),
      /npm run build/,
    );
  });

  it('is left out for the local cloud (no CloudFront there)', () => {
    const local = synth('dev', { site: false });
    local.template.resourceCountIs('AWS::CloudFront::Distribution', 0);
    assert.equal(local.json.Outputs?.WebUrl, undefined);
  });
});

describe('CORS', () => {
  const s = synth('dev');
  const origins = (json: ReturnType<typeof synth>['json'], get: (j: any) => unknown) => JSON.stringify(get(json));

  const { cors: code, source } = liveCors();

  it(`deploys the API's CORS rules of the code (${source}): DELETE included`, () => {
    const [[, api]] = resourcesOfType(s.json, 'AWS::ApiGatewayV2::Api') as any;
    const cors = api.Properties.CorsConfiguration;
    assert.deepEqual(cors.AllowMethods, code.api.allow_methods);
    assert.ok(cors.AllowMethods.includes('DELETE'), 'the privacy routes are DELETE');
    assert.deepEqual(cors.AllowHeaders, code.api.allow_headers);
    assert.deepEqual(cors.ExposeHeaders, code.api.expose_headers);
    assert.equal(cors.MaxAge, code.api.max_age_secs);
    assert.equal(cors.AllowCredentials, false);
    assert.ok(!JSON.stringify(cors.AllowOrigins).includes('"*"'), 'never any origin');
  });

  it('agrees with the committed copy the stack is built from', () => {
    assert.deepEqual(loadCors(), code, 'infra/cors.json is stale: run cargo xtask infra-schema');
  });

  it('allows the WebOrigins parameter, by default the site’s CloudFront domain', () => {
    const [[, api]] = resourcesOfType(s.json, 'AWS::ApiGatewayV2::Api') as any;
    const allow = api.Properties.CorsConfiguration.AllowOrigins;
    const distId = id(s, s.stack.site!.distribution);
    assert.deepEqual(allow['Fn::If'][2], { 'Fn::Split': [',', { Ref: 'WebOrigins' }] });
    assert.deepEqual(allow['Fn::If'][1], [{ 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distId, 'DomainName'] }]] }]);
    assert.deepEqual(s.json.Conditions?.DefaultWebOrigins, { 'Fn::Equals': [{ Ref: 'WebOrigins' }, ''] });
    const pattern = new RegExp(s.json.Parameters!.WebOrigins.AllowedPattern);
    for (const ok of ['', 'https://app.example.com', 'https://a.example.com,http://localhost:5173']) assert.ok(pattern.test(ok), ok);
    for (const bad of ['*', 'https://app.example.com/', 'http://app.example.com', 'https://a.example.com, https://b']) {
      assert.ok(!pattern.test(bad), bad);
    }
  });

  it('lets the same origins PUT and GET presigned storage URLs', () => {
    const bucket = s.json.Resources[id(s, s.stack.bucket)]!.Properties!;
    const [rule] = bucket.CorsConfiguration.CorsRules;
    assert.deepEqual(rule.AllowedMethods, code.bucket.allow_methods);
    assert.deepEqual(rule.AllowedHeaders, code.bucket.allow_headers);
    assert.deepEqual(rule.ExposedHeaders, code.bucket.expose_headers);
    assert.equal(rule.MaxAge, code.bucket.max_age_secs);
    const [[, api]] = resourcesOfType(s.json, 'AWS::ApiGatewayV2::Api') as any;
    assert.equal(
      origins(s.json, () => rule.AllowedOrigins),
      origins(s.json, () => api.Properties.CorsConfiguration.AllowOrigins),
    );
  });

  it('falls back to the local web app without a site', () => {
    const local = synth('dev', { site: false });
    const [[, api]] = resourcesOfType(local.json, 'AWS::ApiGatewayV2::Api') as any;
    assert.deepEqual(api.Properties.CorsConfiguration.AllowOrigins['Fn::If'][1], [DEV_WEB_ORIGIN]);
  });
});

describe('web build configuration', () => {
  it('is published as outputs: API base URL, OIDC authority and client id, site URL and bucket', () => {
    const s = synth('dev');
    const out = s.json.Outputs!;
    for (const k of ['WebApiBaseUrl', 'WebOidcAuthority', 'WebOidcClientId', 'WebUrl', 'WebBucketName', 'WebDistributionId']) {
      assert.ok(out[k], `output ${k}`);
    }
    assert.match(JSON.stringify(out.WebApiBaseUrl.Value), /execute-api/);
    assert.equal(out.WebOidcAuthority.Condition, 'UseCognito');
  });

  it('sends the web build to the per-IP front when it is on, so its limit applies to the app', () => {
    const out = synth('prod', { perIpRateLimit: 10_000 }).json.Outputs!;
    const base = JSON.stringify(out.WebApiBaseUrl.Value);
    assert.doesNotMatch(base, /execute-api/);
    assert.match(base, /ApiFront/);
  });

  it('lets the Cognito app client sign in with code + PKCE back to the site, through a hosted UI', () => {
    const s = synth('dev');
    s.template.hasResourceProperties('AWS::Cognito::UserPoolClient', {
      AllowedOAuthFlows: ['code'],
      AllowedOAuthFlowsUserPoolClient: true,
      AllowedOAuthScopes: Match.arrayWith(['openid', 'email']),
      GenerateSecret: false,
      CallbackURLs: [Match.objectLike({ 'Fn::Join': Match.anyValue() })],
    });
    s.template.hasResource('AWS::Cognito::UserPoolDomain', { Condition: 'UseCognito' });
    const [[, client]] = resourcesOfType(s.json, 'AWS::Cognito::UserPoolClient') as any;
    const [, parts] = client.Properties.CallbackURLs[0]['Fn::Join'];
    assert.deepEqual(parts[1], '/');
    const [[, api]] = resourcesOfType(s.json, 'AWS::ApiGatewayV2::Api') as any;
    assert.deepEqual(parts[0], { 'Fn::Select': [0, api.Properties.CorsConfiguration.AllowOrigins] }, 'the first allowed origin');
    assert.deepEqual(client.Properties.LogoutURLs, client.Properties.CallbackURLs);
  });
});
