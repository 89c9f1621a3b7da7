/**
 * The web app (`web/`, built by `npm run build` to `web/dist`): a private bucket behind a
 * CloudFront distribution that reads it through Origin Access Control. Hashed files under
 * `assets/` are cached for a year; everything else (index.html) is revalidated on every visit,
 * so a deploy shows at the next load. Unknown paths answer index.html (the app routes itself).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { Aws, type CfnResource, Duration, Fn, type RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';

/** Cache-Control of Vite's content-hashed files: a changed file has a new name. */
export const HASHED_CACHE_CONTROL = 'public, max-age=31536000, immutable';
/** Cache-Control of index.html and the other unhashed files: revalidate every time. */
export const HTML_CACHE_CONTROL = 'no-cache';

export interface WebSiteProps {
  readonly removalPolicy: RemovalPolicy;
  /** CSP connect-src origins besides 'self': the API, storage, the OIDC issuer. */
  readonly connectSrc: string[];
  /** The built app to upload (a folder holding index.html); none: upload it yourself. */
  readonly webDist?: string;
}

export class WebSite extends Construct {
  readonly bucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;
  /** `https://<distribution>.cloudfront.net`, no trailing slash (a CORS origin). */
  readonly origin: string;

  constructor(scope: Construct, id: string, props: WebSiteProps) {
    super(scope, id);
    this.bucket = new s3.Bucket(this, 'Bucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: props.removalPolicy,
    });
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'The public, immutable build of the web app, read only by CloudFront through Origin Access Control; ' +
        'an access-log bucket would record nothing but CloudFront fetching files.',
    });

    const headers = new cloudfront.ResponseHeadersPolicy(this, 'SecurityHeaders', {
      comment: 'Atelier web app: CSP, HSTS, no-sniff, frame denial, referrer policy',
      securityHeadersBehavior: {
        contentSecurityPolicy: { contentSecurityPolicy: contentSecurityPolicy(props.connectSrc), override: true },
        strictTransportSecurity: {
          accessControlMaxAge: Duration.days(365),
          includeSubdomains: true,
          preload: true,
          override: true,
        },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
        referrerPolicy: {
          referrerPolicy: cloudfront.HeadersReferrerPolicy.STRICT_ORIGIN_WHEN_CROSS_ORIGIN,
          override: true,
        },
      },
    });
    const origin = origins.S3BucketOrigin.withOriginAccessControl(this.bucket);
    // CachingOptimized honours the objects' Cache-Control (set at upload, above).
    const behavior: cloudfront.BehaviorOptions = {
      origin,
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
      cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
      responseHeadersPolicy: headers,
      compress: true,
    };
    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'Atelier web app',
      defaultRootObject: 'index.html',
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      defaultBehavior: behavior,
      additionalBehaviors: { 'assets/*': behavior },
      // The app routes itself: a deep link is index.html. S3 answers 403 for a missing key
      // when CloudFront may not list the bucket.
      errorResponses: [403, 404].map((httpStatus) => ({
        httpStatus,
        responseHttpStatus: 200,
        responsePagePath: '/index.html',
        ttl: Duration.seconds(0),
      })),
    });
    Validations.of(this.distribution).acknowledge(
      { id: 'AwsSolutions-CFR1', reason: 'No geo restriction: the product is offered worldwide.' },
      {
        id: 'AwsSolutions-CFR2',
        reason: 'Static files only; the API behind the app has its own throttling and the optional per-IP WAF front.',
      },
      {
        id: 'AwsSolutions-CFR3',
        reason: 'Static public files; every request that matters reaches the HTTP API, whose access log has it with its IP.',
      },
      {
        id: 'AwsSolutions-CFR4',
        reason: 'The default *.cloudfront.net certificate; a custom domain with its own certificate sets TLS 1.2+.',
      },
    );
    this.origin = `https://${this.distribution.distributionDomainName}`;

    if (props.webDist !== undefined) {
      if (!existsSync(join(props.webDist, 'index.html'))) {
        throw new Error(`${props.webDist}/index.html is missing: run \`npm run build\` in web/ first`);
      }
      const source = [s3deploy.Source.asset(props.webDist)];
      const hashed = new s3deploy.BucketDeployment(this, 'DeployHashed', {
        sources: source,
        destinationBucket: this.bucket,
        include: ['assets/*'],
        exclude: ['*'],
        prune: false,
        cacheControl: [s3deploy.CacheControl.fromString(HASHED_CACHE_CONTROL)],
      });
      // After the hashed files, so a new index.html never names a file not yet uploaded.
      const html = new s3deploy.BucketDeployment(this, 'DeployHtml', {
        sources: source,
        destinationBucket: this.bucket,
        exclude: ['assets/*'],
        prune: false,
        cacheControl: [s3deploy.CacheControl.fromString(HTML_CACHE_CONTROL)],
        distribution: this.distribution,
        distributionPaths: ['/*'],
      });
      html.node.addDependency(hashed);
      acknowledgeDeploymentHandler(Stack.of(this), this.bucket);
    }
  }
}

/**
 * The app's CSP: its own scripts and styles only, no frames, no plugins; images from itself,
 * blobs (the editor) and storage; fetches to `connectSrc`.
 */
export function contentSecurityPolicy(connectSrc: string[]): string {
  const storage = `https://*.s3.${Aws.REGION}.${Aws.URL_SUFFIX}`;
  return Fn.join('; ', [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' blob: data: ${storage}`,
    Fn.join(' ', ["connect-src 'self'", storage, ...connectSrc]),
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ]);
}

/** cdk-nag on the BucketDeployment handler CDK itself writes (one per stack). */
function acknowledgeDeploymentHandler(stack: Stack, siteBucket: s3.Bucket): void {
  const reason =
    'The handler aws-cdk-lib generates for BucketDeployment (it copies the build from the CDK asset bucket into the ' +
    'site bucket and invalidates the distribution): its role and policy are CDK’s, and it runs only during a deployment.';
  const bucketId = stack.getLogicalId(siteBucket.node.defaultChild as CfnResource);
  const findings = [
    'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
    ...['s3:GetObject*', 's3:GetBucket*', 's3:List*', 's3:DeleteObject*', 's3:Abort*'].map(
      (a) => `AwsSolutions-IAM5[Action::${a}]`,
    ),
    'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*]',
    `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/*]`,
    'AwsSolutions-IAM5[Resource::*]',
    'AwsSolutions-L1',
  ];
  for (const c of stack.node.children) {
    if (!c.node.id.startsWith('Custom::CDKBucketDeployment')) continue;
    Validations.of(c).acknowledge(...findings.map((id) => ({ id, reason })));
  }
}
