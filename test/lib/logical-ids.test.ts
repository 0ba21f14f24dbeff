import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sharedStack } from './build-stack';

/** Logical ID → resource type of every resource, per store (see the file's `_provenance`). */
const EXPECTED = JSON.parse(
  readFileSync(new URL('./fixtures/logical-ids.json', import.meta.url), 'utf8'),
) as Record<'athena' | 'timestream', Record<string, string>>;

/**
 * `id` without the hash of the API aws-cdk-lib appends to an API Gateway Deployment's logical ID
 * (so that any change to the API deploys it anew); any other id as it is.
 */
function withoutDeploymentHash(id: string, type: string): string {
  return type === 'AWS::ApiGateway::Deployment' ? id.replace(/[0-9a-f]{32}$/, '') : id;
}

describe('logical IDs (a deployed stack replaces a resource whose logical ID changes)', () => {
  it.each(['athena', 'timestream'] as const)(
    'keeps every resource’s logical ID and type with store %s',
    (store) => {
      // Prepare
      const { template } = sharedStack({ store });

      // Act
      const resources = Object.fromEntries(
        Object.entries(template.toJSON().Resources as Record<string, { Type: string }>)
          .filter(([, resource]) => resource.Type !== 'AWS::CDK::Metadata')
          .map(([id, resource]) => [withoutDeploymentHash(id, resource.Type), resource.Type]),
      );

      // Assess
      expect(resources).toEqual(EXPECTED[store]);
    },
  );
});
