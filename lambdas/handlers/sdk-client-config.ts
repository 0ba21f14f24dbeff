import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';

/**
 * What every AWS SDK v3 client a Lambda builds is given on top of the Lambda's environment
 * (region and credentials from `AWS_REGION` and the execution role when left out). In production
 * it is empty; a benchmark or a test passes a `requestHandler` answering canned service responses,
 * static `credentials` and a `region`, so the real clients serialise, sign and parse every call
 * without a network.
 *
 * The fields are the SDK's shared client settings (the same smithy types in every client's config).
 */
export type SdkClientConfig = Pick<DynamoDBClientConfig, 'region' | 'credentials' | 'requestHandler'>;
